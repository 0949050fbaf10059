package adapter

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// vmHWM returns the process's peak resident set (VmHWM) in kB, or -1.
func vmHWM() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int
			for _, c := range strings.TrimSpace(rest) {
				if c < '0' || c > '9' {
					break
				}
				kb = kb*10 + int(c-'0')
			}
			return kb
		}
	}
	return -1
}

// TestSnappyClaimFlood: 600 requests of 6 bytes whose snappy header
// claims 32 MiB, 24 at a time, then 600 of 256 KiB of garbage claiming 5
// MiB (within what 256 KiB could expand to, beyond the pooled buffers), all get 400 and make the
// server allocate a few KiB each, not what they claim. The allocation and
// the peak RSS are printed.
func TestSnappyClaimFlood(t *testing.T) {
	_, base := newServedHandler(t, Options{MaxRequestBytes: 32 << 20, MaxConcurrentRequests: 24})
	rng := rand.New(rand.NewPCG(5, 6))
	garbage := make([]byte, 256<<10)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32()) | 1 // odd: every tag a copy, with nothing before it
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"6 bytes claiming 32 MiB", append(binary.AppendUvarint(nil, 32<<20), 0x00, 'a')},
		{"256 KiB claiming 5 MiB", append(binary.AppendUvarint(nil, 5<<20), garbage...)},
	} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		hwm := vmHWM()
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		next := make(chan struct{}, 600)
		for range 600 {
			next <- struct{}{}
		}
		close(next)
		for range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{}
				for range next {
					resp, err := client.Post(base+"/api/v1/write", "application/x-protobuf", bytes.NewReader(tc.body))
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					mu.Lock()
					codes[resp.StatusCode]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: 600 requests, 24 at a time: answers %v; allocated %.1f MiB in all (%.1f KiB a request, client side included); peak RSS %d -> %d kB",
			tc.name, codes, float64(alloc)/(1<<20), float64(alloc)/600/1024, hwm, vmHWM())
		if codes[http.StatusBadRequest] != 600 {
			t.Errorf("answers %v, want 600 × 400", codes)
		}
		// What the claims would have cost: 600 × the claim. Allowed: the
		// bodies received (256 KiB each, twice: client and server) and HTTP.
		if limit := uint64(600 * (2*len(tc.body) + 64<<10)); alloc > limit {
			t.Errorf("allocated %d bytes, more than %d", alloc, limit)
		}
	}
}
