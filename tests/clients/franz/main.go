// Command franz is the franz-go client driven by tests/e2e/test_franz.py.
//
// Usage: franz MODE --bootstrap B --topic T [--flag value]...
// Modes: produce (records as JSON lines on stdin), consume, offsets, create-topic, describe-topic,
// describe-configs, create-partitions, delete-topic, group (a consumer group member, see
// group.go), txn-ctp (consume-transform-produce in a GroupTransactSession, see txn.go), sr
// (pkg/sr's registry client and Serde, see sr.go).
// --tls-ca, --tls-cert and --tls-key connect over TLS (see tls.go; not in group mode);
// --sasl-mechanism, --sasl-user and --sasl-password authenticate (see sasl.go). Each
// result is one JSON object per stdout line;
// a failure prints {"error": "..."} and exits 1.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type record struct {
	Partition *int32     `json:"partition"`
	Key       *string    `json:"key"`
	Value     *string    `json:"value"`
	Headers   [][]string `json:"headers"`
	Ts        *int64     `json:"ts"`
}

func emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(b))
}

func fail(err error) {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	fmt.Println(string(b))
	os.Exit(1)
}

func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

func strOf(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: MODE --bootstrap B --topic T [--flag value]..."))
	}
	args := map[string]string{}
	for i := 2; i+1 < len(os.Args); i += 2 {
		if !strings.HasPrefix(os.Args[i], "--") {
			fail(fmt.Errorf("expected a --flag, got %s", os.Args[i]))
		}
		args[os.Args[i][2:]] = os.Args[i+1]
	}
	get := func(name, def string) string {
		if v, ok := args[name]; ok {
			return v
		}
		return def
	}
	num := func(name, def string) int64 {
		n, err := strconv.ParseInt(get(name, def), 10, 64)
		if err != nil {
			fail(fmt.Errorf("--%s: %w", name, err))
		}
		return n
	}
	topic := get("topic", "")
	timeout := time.Duration(num("timeout-ms", "20000")) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	seeds := strings.Split(get("bootstrap", "127.0.0.1:9092"), ",")
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("e2e-franz")}
	if cfg := tlsConfig(get); cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if opt := saslOpt(get); opt != nil {
		opts = append(opts, opt)
	}
	mode := os.Args[1]
	if mode == "sr" {
		srMode(ctx, opts, topic, get("registry", ""), get("registry-read", get("registry", "")), int(num("count", "10")))
		return
	}
	if mode == "group" {
		group(seeds, topic, get("group", ""), get("balancer", "cooperative-sticky"), timeout)
		return
	}
	if mode == "txn-ctp" {
		txnPipeline(opts, txnPipelineArgs{input: topic, output: get("output", ""), group: get("group", ""),
			transactionalID: get("transactional-id", ""), count: int(num("count", "0")),
			abortEvery: int(num("abort-every", "3")), partitions: int32(num("partitions", "1")), timeout: timeout})
		return
	}
	if mode == "produce" {
		codec := map[string]kgo.CompressionCodec{
			"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
			"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
		}[get("codec", "none")]
		opts = append(opts, kgo.ProducerBatchCompression(codec), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
			kgo.MaxBufferedRecords(100000))
	}
	if mode == "consume" {
		opts = append(opts, kgo.FetchMaxWait(200*time.Millisecond))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail(err)
	}
	defer cl.Close()

	switch mode {
	case "produce":
		produce(ctx, cl, topic)
	case "consume":
		consume(ctx, cl, topic, int32(num("partition", "0")), get("start", "beginning"), int(num("count", "0")))
	case "offsets":
		offsets(ctx, kadm.NewClient(cl), topic, int32(num("partition", "0")), get("ts", "-1"))
	default:
		admin(ctx, kadm.NewClient(cl), mode, topic, int32(num("partitions", "1")), get("config", ""))
	}
}

func produce(ctx context.Context, cl *kgo.Client, topic string) {
	var recs []*kgo.Record
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		if strings.TrimSpace(in.Text()) == "" {
			continue
		}
		var r record
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			fail(err)
		}
		rec := &kgo.Record{Topic: topic, Key: bytesOf(r.Key), Value: bytesOf(r.Value)}
		if r.Partition != nil {
			rec.Partition = *r.Partition
		}
		if r.Ts != nil {
			rec.Timestamp = time.UnixMilli(*r.Ts)
		}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
		recs = append(recs, rec)
	}
	if err := in.Err(); err != nil {
		fail(err)
	}
	results := cl.ProduceSync(ctx, recs...)
	if err := results.FirstErr(); err != nil {
		fail(err)
	}
	for _, r := range results {
		emit(map[string]any{"partition": r.Record.Partition, "offset": r.Record.Offset})
	}
}

func consume(ctx context.Context, cl *kgo.Client, topic string, partition int32, start string, count int) {
	at := kgo.NewOffset()
	switch start {
	case "beginning":
		at = at.AtStart()
	case "end":
		// Resolve the end now (ListOffsets latest, as AtEnd would) so the caller knows when
		// records it produces next are guaranteed to be after our starting point.
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			fail(err)
		}
		o, ok := ends.Lookup(topic, partition)
		if !ok || o.Err != nil {
			fail(fmt.Errorf("no end offset for %s/%d: %v", topic, partition, o.Err))
		}
		at = at.At(o.Offset)
		emit(map[string]any{"position": o.Offset})
	default:
		n, err := strconv.ParseInt(start, 10, 64)
		if err != nil {
			fail(err)
		}
		at = at.At(n)
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: at}})
	emit(map[string]any{"ready": true})
	seen := 0
	for seen < count {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		for _, fe := range fetches.Errors() {
			fail(fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err))
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if seen >= count {
				return
			}
			headers := [][]*string{}
			for _, h := range r.Headers {
				k := h.Key
				headers = append(headers, []*string{&k, strOf(h.Value)})
			}
			emit(map[string]any{"partition": r.Partition, "offset": r.Offset, "ts": r.Timestamp.UnixMilli(),
				"key": strOf(r.Key), "value": strOf(r.Value), "headers": headers})
			seen++
		})
	}
}

func offsets(ctx context.Context, adm *kadm.Client, topic string, partition int32, list string) {
	for _, t := range strings.Split(list, ",") {
		ts, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			fail(err)
		}
		var listed kadm.ListedOffsets
		switch ts {
		case -2:
			listed, err = adm.ListStartOffsets(ctx, topic)
		case -1:
			listed, err = adm.ListEndOffsets(ctx, topic)
		default:
			listed, err = adm.ListOffsetsAfterMilli(ctx, ts, topic)
		}
		if err != nil {
			fail(err)
		}
		o, ok := listed.Lookup(topic, partition)
		if !ok {
			fail(fmt.Errorf("no offset for %s/%d", topic, partition))
		}
		if o.Err != nil {
			fail(o.Err)
		}
		emit(map[string]any{"ts": ts, "offset": o.Offset})
	}
}

func admin(ctx context.Context, adm *kadm.Client, mode, topic string, partitions int32, config string) {
	switch mode {
	case "create-topic":
		configs := map[string]*string{}
		for _, kv := range strings.Split(config, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				v := v
				configs[k] = &v
			}
		}
		resp, err := adm.CreateTopic(ctx, partitions, -1, configs, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			fail(err)
		}
		emit(map[string]any{"ok": true})
	case "describe-topic":
		details, err := adm.ListTopics(ctx, topic)
		if err != nil {
			fail(err)
		}
		d, ok := details[topic]
		if !ok {
			fail(fmt.Errorf("topic %s not found", topic))
		}
		if d.Err != nil {
			fail(d.Err)
		}
		emit(map[string]any{"partitions": len(d.Partitions)})
	case "describe-configs":
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			fail(err)
		}
		rc, err := rcs.On(topic, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			fail(err)
		}
		out := map[string]*string{}
		for _, c := range rc.Configs {
			out[c.Key] = c.Value
		}
		emit(map[string]any{"configs": out})
	case "create-partitions":
		resp, err := adm.UpdatePartitions(ctx, int(partitions), topic)
		if err == nil {
			var r kadm.CreatePartitionsResponse
			r, err = resp.On(topic, nil)
			if err == nil {
				err = r.Err
			}
		}
		if err != nil {
			fail(err)
		}
		emit(map[string]any{"ok": true})
	case "delete-topic":
		resp, err := adm.DeleteTopic(ctx, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			fail(err)
		}
		emit(map[string]any{"ok": true})
	default:
		fail(fmt.Errorf("unknown mode %s", mode))
	}
}
