package dense

import (
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestZeroAllocs: Decode allocates nothing once its Codec and the caller's
// buffers have grown, and neither does Encode.
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for name, cells := range benchRows() {
		var c Codec
		v, ok := c.Encode(nil, testRow, cells)
		if !ok {
			t.Fatalf("%s: refused", name)
		}
		dst := make([]store.Cell, 0, 1)
		buf := make([]byte, 0, 4096)
		enc := make([]byte, 0, 4096)
		if n := testing.AllocsPerRun(100, func() {
			var err error
			dst, buf, err = c.Decode(dst[:0], buf[:0], testRow, v)
			if err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: Decode allocates %v times a call", name, n)
		}
		if n := testing.AllocsPerRun(100, func() { enc, _ = c.Encode(enc[:0], testRow, cells) }); n != 0 {
			t.Errorf("%s: Encode allocates %v times a call", name, n)
		}
	}
}
