// Package testlog is the sink of a test's logger whose records come from
// the goroutines of the code under test. It is for tests only.
package testlog

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use: loggers write to it,
// the test reads what they wrote.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Count returns how many times substr was written (as strings.Count).
func (s *Buffer) Count(substr string) int { return strings.Count(s.String(), substr) }
