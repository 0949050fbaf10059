package embedded

import (
	"testing"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, string) {
		t.Helper()
		s, err := Open(t.TempDir(), Options{NoSync: true, Tables: []string{"contract"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, "contract"
	}, storetest.Options{})
}
