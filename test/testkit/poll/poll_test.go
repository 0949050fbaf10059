package poll

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestWait(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		doneAt  int   // the call that reports done, 0 for never
		err     error // returned by the third call
		want    string
		wantErr error
		calls   int
	}{
		{name: "done at once", doneAt: 1, calls: 1},
		{name: "done on the fourth check", doneAt: 4, calls: 4},
		{name: "check's error ends the wait", err: boom, wantErr: boom, calls: 3},
		{name: "bound passes", want: "not ready after 1s (last saw: call 11)", calls: 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				err := Wait(context.Background(), time.Second, 100*time.Millisecond, "ready", func() (bool, string, error) {
					calls++
					if calls == 3 && tc.err != nil {
						return false, "", tc.err
					}
					return calls == tc.doneAt, fmt.Sprintf("call %d", calls), nil
				})
				if calls != tc.calls {
					t.Errorf("check called %d times, want %d", calls, tc.calls)
				}
				switch {
				case tc.wantErr != nil:
					if !errors.Is(err, tc.wantErr) {
						t.Errorf("Wait = %v, want %v", err, tc.wantErr)
					}
				case tc.want != "":
					if err == nil || err.Error() != tc.want {
						t.Errorf("Wait = %v, want %q", err, tc.want)
					}
				case err != nil:
					t.Errorf("Wait = %v, want nil", err)
				}
			})
		})
	}
}

func TestWaitContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		err := Wait(ctx, time.Hour, 100*time.Millisecond, "ready", func() (bool, string, error) { return false, "nothing", nil })
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "last saw: nothing") {
			t.Errorf("Wait = %v, want the context's end and what it last saw", err)
		}
	})
}
