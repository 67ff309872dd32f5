// Command scale-load is the franz-go side of bench/scale.py: many clients in one process, which
// would be too heavy as as many librdkafka instances (each has its own threads).
//
//	scale-load produce --bootstrap B --topic T --partitions P --clients N --rate R --seconds S [--size 1024]
//	scale-load consume --bootstrap B --topic T --groups G --records N [--idle-s 0] [--commit-ms 1000] [--timeout-s 300]
//
// produce: N clients, one producer connection each, together sending R records/s of --size
// bytes for S seconds, round-robin over the P partitions (acks=all, linger 5 ms, batches up to
// 1 MiB, franz-go's default idempotent producer). consume: G consumer groups of one member
// each, every group reading the topic from the start until it has N records, committing every
// --commit-ms and once more at the end, and then (--idle-s) polling on at the end of the log until
// that many seconds after the start, to show what idle consumers cost. Each mode prints one JSON line.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: scale-load produce|consume [flags]"))
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "")
	topic := fs.String("topic", "", "")
	partitions := fs.Int("partitions", 1, "")
	clients := fs.Int("clients", 1, "")
	rate := fs.Float64("rate", 1000, "records per second, all clients together")
	seconds := fs.Float64("seconds", 10, "")
	size := fs.Int("size", 1024, "")
	groups := fs.Int("groups", 1, "")
	records := fs.Int64("records", 0, "records each group must read")
	idleS := fs.Float64("idle-s", 0, "keep polling until this long after the start")
	commitMs := fs.Int("commit-ms", 1000, "")
	timeoutS := fs.Int("timeout-s", 300, "")
	if err := fs.Parse(os.Args[2:]); err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "produce":
		produce(*bootstrap, *topic, int32(*partitions), *clients, *rate, *seconds, *size)
	case "consume":
		consume(*bootstrap, *topic, *groups, *records, time.Duration(*idleS*float64(time.Second)),
			time.Duration(*commitMs)*time.Millisecond, time.Duration(*timeoutS)*time.Second)
	default:
		fail(fmt.Errorf("unknown mode %q", os.Args[1]))
	}
}

func emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func fail(err error) {
	emit(map[string]string{"error": err.Error()})
	os.Exit(1)
}

func produce(bootstrap, topic string, partitions int32, n int, rate, seconds float64, size int) {
	payload := make([]byte, size)
	_, _ = rand.Read(payload)
	var next, acked, failed atomic.Int64
	var firstErr atomic.Value
	clients := make([]*kgo.Client, n)
	for i := range clients {
		cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(fmt.Sprintf("scale-%d", i)),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20))
		if err != nil {
			fail(err)
		}
		clients[i] = cl
	}
	// Every client has its connection up before the clock starts, so the load is the trickle.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func(cl *kgo.Client) {
			defer wg.Done()
			if err := cl.Ping(ctx); err != nil {
				fail(err)
			}
		}(cl)
	}
	wg.Wait()
	interval := time.Duration(float64(n) / rate * float64(time.Second))
	start := time.Now()
	end := start.Add(time.Duration(seconds * float64(time.Second)))
	for i, cl := range clients {
		wg.Add(1)
		go func(i int, cl *kgo.Client) {
			defer wg.Done()
			// Staggered, so the clients' sends spread over each interval instead of bursting.
			due := start.Add(interval * time.Duration(i) / time.Duration(n))
			for due.Before(end) {
				time.Sleep(time.Until(due))
				p := int32(next.Add(1) % int64(partitions))
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: payload},
					func(_ *kgo.Record, err error) {
						if err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, err.Error())
						} else {
							acked.Add(1)
						}
					})
				due = due.Add(interval)
			}
			if err := cl.Flush(ctx); err != nil {
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}(i, cl)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	for _, cl := range clients {
		cl.Close()
	}
	out := map[string]any{"records": acked.Load(), "errors": failed.Load(), "elapsed_s": elapsed,
		"mib_per_s": float64(acked.Load()) * float64(size) / elapsed / (1 << 20)}
	if e := firstErr.Load(); e != nil {
		out["first_error"] = e
	}
	emit(out)
}

func consume(bootstrap, topic string, groups int, records int64, idle, commit, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var total, bytes, failures, short atomic.Int64
	var slowest atomic.Int64
	start := time.Now()
	idleUntil := start.Add(idle)
	var wg sync.WaitGroup
	for g := 0; g < groups; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(fmt.Sprintf("scale-g%d", g)),
				kgo.ConsumerGroup(fmt.Sprintf("scale-g%d", g)), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(commit),
				kgo.FetchMaxWait(500*time.Millisecond))
			if err != nil {
				fail(err)
			}
			var got int64
			for (got < records || time.Now().Before(idleUntil)) && ctx.Err() == nil {
				// Caught up: poll only until the idle time is over (PollFetches waits for data).
				pollCtx, stopPoll := ctx, context.CancelFunc(func() {})
				if got >= records {
					pollCtx, stopPoll = context.WithDeadline(ctx, idleUntil)
				}
				fetches := cl.PollFetches(pollCtx)
				stopPoll()
				fetches.EachError(func(_ string, _ int32, err error) {
					if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
						failures.Add(1)
					}
				})
				fetches.EachRecord(func(r *kgo.Record) {
					got++
					bytes.Add(int64(len(r.Value)))
				})
			}
			if got < records {
				short.Add(1)
			}
			total.Add(got)
			commitCtx, done := context.WithTimeout(context.Background(), 10*time.Second)
			if err := cl.CommitUncommittedOffsets(commitCtx); err != nil {
				failures.Add(1)
			}
			done()
			ms := time.Since(start).Milliseconds()
			for old := slowest.Load(); ms > old && !slowest.CompareAndSwap(old, ms); old = slowest.Load() {
			}
			cl.Close()
		}(g)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	emit(map[string]any{"groups": groups, "records": total.Load(), "bytes": bytes.Load(),
		"errors": failures.Load(), "short_groups": short.Load(), "elapsed_s": elapsed,
		"slowest_group_s": float64(slowest.Load()) / 1000})
}
