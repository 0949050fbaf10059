package ingest

import (
	"fmt"
	"strings"
)

// Result says what a write did.
type Result struct {
	Samples    int            // float samples acknowledged by the store
	Histograms int            // native histograms acknowledged
	Exemplars  int            // exemplars acknowledged (distinct slots)
	Rejected   map[string]int // samples and histograms rejected, by reason
	// Deduped counts the samples and histograms of a request dropped as
	// coming from a replica of an HA pair that is not the elected one.
	Deduped int
	// Expired counts the samples and histograms dropped as older than
	// the retention (Options.Retention).
	Expired int
}

// RejectError is a partial write: the valid series were written, these
// were not and never will be.
type RejectError struct {
	count int
	named []string
}

func (e *RejectError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d samples or histograms rejected: %s", e.count, strings.Join(e.named, "; "))
	if more := e.count - len(e.named); len(e.named) == maxNamedRejects && more > 0 {
		fmt.Fprintf(&sb, "; and more")
	}
	return sb.String()
}
