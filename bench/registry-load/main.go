// registry-load drives a Confluent Schema Registry API with keep-alive connections and prints
// one JSON line: requests per second and latency percentiles.
//
//	registry-load -url http://127.0.0.1:8081 -mode lookup -id 1 -seconds 10 -workers 16
//	registry-load -url ... -mode register -seconds 10 -workers 4
//
// `lookup` repeats GET /schemas/ids/{id}; `register` registers a new Avro schema per request
// (a record with a field named after a counter) under a subject per worker, with compatibility
// NONE set first so that every register is accepted.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8081", "registry URL")
	mode := flag.String("mode", "lookup", "lookup or register")
	id := flag.Int("id", 1, "schema id to look up")
	seconds := flag.Float64("seconds", 10, "how long to run")
	workers := flag.Int("workers", 16, "concurrent connections")
	flag.Parse()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *workers}, Timeout: 10 * time.Second}
	if *mode == "register" {
		body := []byte(`{"compatibility":"NONE"}`)
		req, _ := http.NewRequest("PUT", *url+"/config", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		if resp, err := client.Do(req); err != nil || resp.StatusCode != 200 {
			fmt.Fprintln(os.Stderr, "cannot set compatibility:", err)
			os.Exit(1)
		}
	}
	deadline := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
	var errors, counter int64
	latencies := make([][]float64, *workers)
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				var req *http.Request
				if *mode == "register" {
					n := atomic.AddInt64(&counter, 1)
					schema := fmt.Sprintf(`{"type":"record","name":"R","fields":[{"name":"f%d","type":"long"}]}`, n)
					body, _ := json.Marshal(map[string]string{"schema": schema})
					req, _ = http.NewRequest("POST", fmt.Sprintf("%s/subjects/load-%d/versions", *url, w), bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
				} else {
					req, _ = http.NewRequest("GET", fmt.Sprintf("%s/schemas/ids/%d", *url, *id), nil)
				}
				start := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					atomic.AddInt64(&errors, 1)
					continue
				}
				latencies[w] = append(latencies[w], float64(time.Since(start).Microseconds())/1000)
			}
		}(w)
	}
	wg.Wait()
	var all []float64
	for _, l := range latencies {
		all = append(all, l...)
	}
	sort.Float64s(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return all[int(p*float64(len(all)-1))]
	}
	out, _ := json.Marshal(map[string]any{
		"mode": *mode, "requests": len(all), "errors": errors,
		"per_sec": float64(len(all)) / *seconds, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
	})
	fmt.Println(string(out))
}
