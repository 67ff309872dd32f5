// Command sarama is the IBM/sarama client driven by tests/e2e/test_sarama.py.
//
// Usage: sarama MODE --bootstrap B --topic T [--flag value]...
// Modes: produce (records as JSON lines on stdin), consume, offsets, create-topic, describe-topic,
// describe-configs, create-partitions, delete-topic. --tls-ca, --tls-cert and --tls-key connect
// over TLS (see tls.go); --sasl-mechanism, --sasl-user and --sasl-password authenticate (see
// sasl.go). Each result is one JSON object per stdout line;
// a failure prints {"error": "..."} and exits 1.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
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

	cfg := sarama.NewConfig()
	cfg.ClientID = "e2e-sarama"
	cfg.Version = sarama.V3_6_0_0
	cfg.Net.DialTimeout = 10 * time.Second
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
		"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
	}[get("codec", "none")]
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	if tlsCfg := tlsConfig(get); tlsCfg != nil {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = tlsCfg
	}
	saslConfig(cfg, get)

	brokers := strings.Split(get("bootstrap", "127.0.0.1:9092"), ",")
	topic := get("topic", "")
	partition := int32(num("partition", "0"))
	timeout := time.Duration(num("timeout-ms", "20000")) * time.Millisecond

	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		fail(err)
	}
	defer client.Close()

	switch mode := os.Args[1]; mode {
	case "produce":
		produce(client, topic)
	case "consume":
		consume(client, topic, partition, get("start", "beginning"), int(num("count", "0")), timeout)
	case "offsets":
		for _, t := range strings.Split(get("ts", "-1"), ",") {
			ts, err := strconv.ParseInt(t, 10, 64)
			if err != nil {
				fail(err)
			}
			o, err := client.GetOffset(topic, partition, ts)
			if err != nil {
				fail(err)
			}
			emit(map[string]any{"ts": ts, "offset": o})
		}
	default:
		admin(client, mode, topic, int32(num("partitions", "1")), get("config", ""))
	}
}

func produce(client sarama.Client, topic string) {
	var msgs []*sarama.ProducerMessage
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
		m := &sarama.ProducerMessage{Topic: topic}
		if r.Partition != nil {
			m.Partition = *r.Partition
		}
		if r.Key != nil {
			m.Key = sarama.StringEncoder(*r.Key)
		}
		if r.Value != nil {
			m.Value = sarama.StringEncoder(*r.Value)
		}
		if r.Ts != nil {
			m.Timestamp = time.UnixMilli(*r.Ts)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h[0]), Value: []byte(h[1])})
		}
		msgs = append(msgs, m)
	}
	if err := in.Err(); err != nil {
		fail(err)
	}
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		fail(err)
	}
	defer producer.Close()
	if err := producer.SendMessages(msgs); err != nil {
		fail(err)
	}
	for _, m := range msgs {
		emit(map[string]any{"partition": m.Partition, "offset": m.Offset})
	}
}

func consume(client sarama.Client, topic string, partition int32, start string, count int, timeout time.Duration) {
	var at int64
	switch start {
	case "beginning":
		at = sarama.OffsetOldest
	case "end":
		at = sarama.OffsetNewest
	default:
		n, err := strconv.ParseInt(start, 10, 64)
		if err != nil {
			fail(err)
		}
		at = n
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		fail(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, partition, at)
	if err != nil {
		fail(err)
	}
	defer pc.Close()
	// ConsumePartition resolved the starting offset synchronously: records produced from now on are ours.
	emit(map[string]any{"ready": true})
	deadline := time.After(timeout)
	for seen := 0; seen < count; {
		select {
		case m := <-pc.Messages():
			headers := [][]*string{}
			for _, h := range m.Headers {
				headers = append(headers, []*string{strOf(h.Key), strOf(h.Value)})
			}
			emit(map[string]any{"partition": m.Partition, "offset": m.Offset, "ts": m.Timestamp.UnixMilli(),
				"key": strOf(m.Key), "value": strOf(m.Value), "headers": headers})
			seen++
		case e := <-pc.Errors():
			fail(e)
		case <-deadline:
			return
		}
	}
}

func admin(client sarama.Client, mode, topic string, partitions int32, config string) {
	adm, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		fail(err)
	}
	switch mode {
	case "create-topic":
		entries := map[string]*string{}
		for _, kv := range strings.Split(config, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				v := v
				entries[k] = &v
			}
		}
		err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: -1, ConfigEntries: entries}, false)
		if err == nil {
			emit(map[string]any{"ok": true})
		}
	case "describe-topic":
		var md []*sarama.TopicMetadata
		md, err = adm.DescribeTopics([]string{topic})
		if err == nil && len(md) == 1 && md[0].Err != sarama.ErrNoError {
			err = md[0].Err
		}
		if err == nil {
			emit(map[string]any{"partitions": len(md[0].Partitions)})
		}
	case "describe-configs":
		var entries []sarama.ConfigEntry
		entries, err = adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
		if err == nil {
			out := map[string]string{}
			for _, e := range entries {
				out[e.Name] = e.Value
			}
			emit(map[string]any{"configs": out})
		}
	case "create-partitions":
		err = adm.CreatePartitions(topic, partitions, nil, false)
		if err == nil {
			emit(map[string]any{"ok": true})
		}
	case "delete-topic":
		err = adm.DeleteTopic(topic)
		if err == nil {
			emit(map[string]any{"ok": true})
		}
	default:
		err = fmt.Errorf("unknown mode %s", mode)
	}
	if err != nil {
		fail(err)
	}
}
