package main

// Mode txn-ctp: consume-transform-produce through a kgo GroupTransactSession. Reads --topic in
// read_committed as --group, writes each record's value prefixed with "out-" to --output (same
// partition and key) in a transaction that also commits the consumed offsets; every
// --abort-every-th transaction is aborted on purpose (the session then rewinds to the group's
// committed offsets). Stops once --count input records are committed; --partitions is --topic's
// partition count. After each transaction:
//
//	{"txn":n,"outcome":"commit"|"abort","records":r,"sent":{partition:offset},"committed":{...}}
//
// where "committed" is what OffsetFetch (RequireStable) answers right after the transaction ended.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type txnPipelineArgs struct {
	input, output, group, transactionalID string
	count, abortEvery                     int
	partitions                            int32
	timeout                               time.Duration
}

func txnPipeline(opts []kgo.Opt, a txnPipelineArgs) {
	opts = append(opts, kgo.TransactionalID(a.transactionalID), kgo.ConsumerGroup(a.group),
		kgo.ConsumeTopics(a.input), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchMaxWait(200*time.Millisecond))
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		fail(err)
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	done, txn := 0, 0
	for done < a.count {
		fetches := sess.PollRecords(ctx, 40)
		if ctx.Err() != nil {
			fail(fmt.Errorf("only %d of %d input records committed", done, a.count))
		}
		records := fetches.Records()
		if len(records) == 0 {
			continue
		}
		sent := transformInTxn(ctx, sess, records, a.output)
		txn++
		want := kgo.TryCommit
		if txn%a.abortEvery == 0 {
			want = kgo.TryAbort
		}
		committed, err := sess.End(ctx, want)
		if err != nil {
			fail(fmt.Errorf("end transaction %d: %w", txn, err))
		}
		outcome := "abort"
		if committed {
			outcome = "commit"
			done += len(records)
		}
		emit(map[string]any{"txn": txn, "outcome": outcome, "records": len(records), "sent": sent,
			"committed": groupOffsets(ctx, sess.Client(), a.group, a.input, a.partitions)})
	}
}

// transformInTxn begins a transaction and produces every record's transformation; it returns
// the offsets the transaction will commit, by partition.
func transformInTxn(ctx context.Context, sess *kgo.GroupTransactSession, records []*kgo.Record, output string) map[string]int64 {
	if err := sess.Begin(); err != nil {
		fail(err)
	}
	sent := map[string]int64{}
	out := make([]*kgo.Record, 0, len(records))
	for _, r := range records {
		out = append(out, &kgo.Record{Topic: output, Partition: r.Partition, Key: r.Key,
			Value: append([]byte("out-"), r.Value...)})
		sent[strconv.Itoa(int(r.Partition))] = r.Offset + 1
	}
	if err := sess.ProduceSync(ctx, out...).FirstErr(); err != nil {
		fail(fmt.Errorf("produce in transaction: %w", err))
	}
	return sent
}

// groupOffsets asks OffsetFetch with RequireStable, as a read_committed consumer does: offsets
// of a transaction whose markers are still being written are UNSTABLE_OFFSET_COMMIT until then.
func groupOffsets(ctx context.Context, cl *kgo.Client, group, topic string, partitions int32) map[string]int64 {
	for {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group
		req.RequireStable = true
		// Named partitions: Kafka leaves a partition whose only offset is still pending out of a
		// fetch of all the group's topics instead of answering UNSTABLE_OFFSET_COMMIT for it.
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic = topic
		for p := int32(0); p < partitions; p++ {
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			fail(fmt.Errorf("fetch offsets: %w", err))
		}
		out, err := offsetsOf(resp, topic)
		if errors.Is(err, kerr.UnstableOffsetCommit) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			fail(fmt.Errorf("fetch offsets: %w", err))
		}
		return out
	}
}

func offsetsOf(resp *kmsg.OffsetFetchResponse, topic string) (map[string]int64, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, err
			}
			if t.Topic == topic && p.Offset >= 0 {
				out[strconv.Itoa(int(p.Partition))] = p.Offset
			}
		}
	}
	return out, nil
}
