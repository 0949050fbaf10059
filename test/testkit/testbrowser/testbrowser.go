// Package testbrowser drives a real headless Chromium from tests with
// chromedp: Debian's chromium, found or installed by the project's
// tools/scripts/chromium.sh (under CI=true a missing Chromium fails the test,
// it never skips it), started as root without its sandbox and with its
// background networking off (this machine's network is closed), in a
// window of a given size, the requests carrying extra headers (basic
// auth), every console error and uncaught exception of its pages kept
// for the test to check (Errors). Only tests import it.
package testbrowser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// Chromium returns the path of the Chromium that script
// (tools/scripts/chromium.sh, relative to the current directory) finds or
// installs. Under CI=true a failure fails the test; elsewhere it skips it.
func Chromium(t testing.TB, script string) string {
	t.Helper()
	return testproc.ScriptBinary(t, script, "Chromium")
}

// Options configure a Browser.
type Options struct {
	// Width and Height are the window's, 1280x1200 when zero.
	Width, Height int
	// Headers go with every request of the pages (an Authorization for
	// basic auth).
	Headers map[string]string
}

// Browser is a headless Chromium with one tab, closed when the test ends.
type Browser struct {
	ctx context.Context // the tab's

	mu     sync.Mutex
	errors []string
}

// Start starts the Chromium at bin with one tab. A failure to start fails
// the test.
func Start(t testing.TB, bin string, o Options) *Browser {
	t.Helper()
	if o.Width == 0 {
		o.Width, o.Height = 1280, 1200
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // root has no sandbox
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(o.Width, o.Height),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(t.Context()), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &Browser{ctx: ctx}
	// The first run starts the browser: no timeout on its context, which
	// would end the browser with it.
	if err := chromedp.Listen(ctx, b.listen); err != nil {
		t.Fatalf("start Chromium %s: %v", bin, err)
	}
	actions := []chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(int64(o.Width), int64(o.Height))}
	if len(o.Headers) > 0 {
		h := network.Headers{}
		for k, v := range o.Headers {
			h[k] = v
		}
		actions = append(actions, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h})
			return err
		}))
	}
	b.Run(t, time.Minute, "set up the tab", actions...)
	return b
}

// listen keeps the pages' console errors, uncaught exceptions and the
// browser's error log entries (a request answered 4xx or 5xx, a script
// that did not load).
func (b *Browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var args []string
		for _, a := range ev.Args {
			if a.Value != nil {
				args = append(args, string(a.Value))
			} else {
				args = append(args, a.Description)
			}
		}
		msg = "console." + string(ev.Type) + ": " + strings.Join(args, " ")
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, d.Text)
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level != cdplog.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	b.errors = append(b.errors, msg)
	b.mu.Unlock()
}

// Errors returns the console errors, uncaught exceptions and error log
// entries seen since the browser started (or since Take).
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// Take returns what Errors returns and forgets it: for a test that
// caused errors on purpose (a bad query answered 400) and checks them.
func (b *Browser) Take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	errs := b.errors
	b.errors = nil
	return errs
}

// Run runs actions in the tab, for at most bound; an error fails the test
// with what names them.
func (b *Browser) Run(t testing.TB, bound time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, bound)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v (console errors: %q)", what, err, b.Errors())
	}
}

// Value runs action in the tab, for at most bound, and returns its value;
// an error fails the test with what names it.
func Value[T any](t testing.TB, b *Browser, bound time.Duration, what string, action chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, bound)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatalf("%s: %v (console errors: %q)", what, err, b.Errors())
	}
	return v
}

// Screenshot writes a PNG of the window (what a person sees without
// scrolling) to dir/name.png and returns its path.
func (b *Browser) Screenshot(t testing.TB, dir, name string) string {
	t.Helper()
	png := Value(t, b, 30*time.Second, "screenshot "+name, chromedp.CaptureScreenshot())
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
