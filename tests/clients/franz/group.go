package main

// Mode group: one member of a kgo consumer group reading --topic as --group until stdin closes
// or --timeout-ms passes, then it commits and leaves. One JSON line per event:
//
//	{"event":"assigned"|"revoked"|"lost","partitions":[...],"member":m,"generation":g,"ts_ms":t}
//	{"event":"record","partition":p,"offset":o,"key":k,"value":v}
//	{"event":"commit-error"|"fetch-error","error":"..."}
//	{"event":"left","ts_ms":t}
//
// Offsets are committed after each poll's records are printed, and again before partitions are
// given up (rebalances wait while a poll's records are handled), so a later owner resumes right
// after the last printed record.

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const groupCommitTimeout = 10 * time.Second

var emitMu sync.Mutex

func emitLocked(v any) {
	emitMu.Lock()
	defer emitMu.Unlock()
	emit(v)
}

func balancerOf(name string) kgo.GroupBalancer {
	switch name {
	case "range":
		return kgo.RangeBalancer()
	case "roundrobin":
		return kgo.RoundRobinBalancer()
	case "sticky":
		return kgo.StickyBalancer()
	default:
		return kgo.CooperativeStickyBalancer()
	}
}

func group(seeds []string, topic, groupID, balancer string, timeout time.Duration) {
	if groupID == "" {
		fail(fmt.Errorf("group mode needs --group"))
	}
	event := func(kind string, cl *kgo.Client, assigned map[string][]int32) {
		partitions := append([]int32{}, assigned[topic]...)
		sort.Slice(partitions, func(i, j int) bool { return partitions[i] < partitions[j] })
		member, generation := cl.GroupMetadata()
		emitLocked(map[string]any{"event": kind, "partitions": partitions, "member": member,
			"generation": generation, "ts_ms": time.Now().UnixMilli()})
	}
	commit := func(cl *kgo.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), groupCommitTimeout)
		defer cancel()
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			emitLocked(map[string]any{"event": "commit-error", "error": err.Error()})
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("e2e-franz-group"),
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancerOf(balancer)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			event("assigned", cl, m)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			commit(cl)
			event("revoked", cl, m)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			event("lost", cl, m)
		}),
	)
	if err != nil {
		fail(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		stdinClosed := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			close(stdinClosed)
		}()
		select {
		case <-stdinClosed:
		case <-time.After(timeout):
		}
		cancel()
	}()

	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			cl.AllowRebalance()
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			emitLocked(map[string]any{"event": "fetch-error", "partition": p, "error": err.Error()})
		})
		fetches.EachRecord(func(r *kgo.Record) {
			emitLocked(map[string]any{"event": "record", "partition": r.Partition, "offset": r.Offset,
				"key": strOf(r.Key), "value": strOf(r.Value)})
		})
		commit(cl)
		cl.AllowRebalance()
	}
	commit(cl)
	// Close leaves the group (revoking, hence committing, what is still owned).
	cl.Close()
	emitLocked(map[string]any{"event": "left", "ts_ms": time.Now().UnixMilli()})
}
