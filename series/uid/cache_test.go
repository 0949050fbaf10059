package uid

import (
	"bytes"
	"testing"
)

// TestUIDAndNameCaches: both directions of the UID caches keep what was
// put, names of every shape included.
func TestUIDAndNameCaches(t *testing.T) {
	f, r := newUIDCache(1000), newNameCache(1000)
	names := []string{"", "a", "b", "job", "instance", "\x00\x01"}
	for i, n := range names {
		uid := []byte{0, 0, byte(i + 1)}
		f.putName(n, uid)
		r.putUID(uid, n)
	}
	for i, n := range names {
		uid := []byte{0, 0, byte(i + 1)}
		if got, ok := f.getName([]byte(n)); !ok || !bytes.Equal(got, uid) {
			t.Errorf("uid of %q: %x %v, want %x", n, got, ok, uid)
		}
		if got, ok := r.getUID(uid); !ok || got != n {
			t.Errorf("name of %x: %q %v, want %q", uid, got, ok, n)
		}
	}
	if _, ok := f.getName([]byte("absent")); ok {
		t.Error("absent name found")
	}
	if _, ok := r.getUID(make([]byte, 9)); ok {
		t.Error("a 9-byte uid found")
	}
}
