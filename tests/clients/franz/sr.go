package main

// The sr mode: franz-go's Schema Registry client (pkg/sr) against a registry. It registers a
// JSON Schema under <topic>-value, produces --count records through an sr.Serde (the
// Confluent wire format: magic byte, schema id, JSON), then consumes them with a second
// Serde that knows nothing but what it fetches by id from --registry-read (another broker's
// registry), and prints {"id": N, "consumed": N, "subjects": [...]}. A produce refused by the
// broker prints {"error": ...}.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

type order struct {
	ID   int    `json:"id"`
	Item string `json:"item"`
}

const orderSchema = `{"type":"object","title":"Order","properties":{"id":{"type":"integer"},"item":{"type":"string"}},"required":["id","item"]}`

func srMode(ctx context.Context, opts []kgo.Opt, topic, writeURL, readURL string, count int) {
	writer, err := sr.NewClient(sr.URLs(writeURL))
	if err != nil {
		fail(err)
	}
	subject := topic + "-value"
	registered, err := writer.CreateSchema(ctx, subject, sr.Schema{Schema: orderSchema, Type: sr.TypeJSON})
	if err != nil {
		fail(fmt.Errorf("create schema: %w", err))
	}
	var serde sr.Serde
	serde.Register(registered.ID, order{}, sr.EncodeFn(func(v any) ([]byte, error) { return json.Marshal(v) }))
	client, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		fail(err)
	}
	defer client.Close()
	for i := 0; i < count; i++ {
		value, err := serde.Encode(order{ID: i, Item: fmt.Sprintf("item-%d", i)})
		if err != nil {
			fail(err)
		}
		if err := client.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
			fail(fmt.Errorf("produce: %w", err))
		}
	}
	consumed := readBack(ctx, client, readURL, count)
	reader, _ := sr.NewClient(sr.URLs(readURL))
	subjects, err := reader.Subjects(ctx)
	if err != nil {
		fail(err)
	}
	out, _ := json.Marshal(map[string]any{"id": registered.ID, "consumed": consumed, "subjects": subjects})
	fmt.Println(string(out))
}

// readBack decodes records with schemas fetched by id from readURL; the count decoded in order.
func readBack(ctx context.Context, client *kgo.Client, readURL string, count int) int {
	reader, err := sr.NewClient(sr.URLs(readURL))
	if err != nil {
		fail(err)
	}
	var serde sr.Serde
	var header sr.ConfluentHeader
	decoded := 0
	deadline := time.Now().Add(30 * time.Second)
	for decoded < count && time.Now().Before(deadline) {
		fetches := client.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			fail(errs[0].Err)
		}
		for _, r := range fetches.Records() {
			id, _, err := header.DecodeID(r.Value)
			if err != nil {
				fail(err)
			}
			if _, err := serde.DecodeNew(r.Value); err != nil {
				schema, err := reader.SchemaByID(ctx, id)
				if err != nil || schema.Type != sr.TypeJSON {
					fail(fmt.Errorf("schema %d: %v %v", id, schema.Type, err))
				}
				serde.Register(id, order{}, sr.DecodeFn(func(b []byte, v any) error { return json.Unmarshal(b, v) }))
			}
			var o order
			if err := serde.Decode(r.Value, &o); err != nil {
				fail(err)
			}
			if o.ID != decoded || o.Item != fmt.Sprintf("item-%d", decoded) {
				fail(fmt.Errorf("record %d decoded as %+v", decoded, o))
			}
			decoded++
		}
	}
	return decoded
}
