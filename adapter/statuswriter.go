package adapter

import (
	"net/http"
	"time"
)

// statusWriter notes the status code, and with a non-zero stall keeps the
// write deadline between 3/4 stall and stall ahead of each write, so that
// a client that stops reading is cut off while a long answer that is read
// goes on.
type statusWriter struct {
	http.ResponseWriter
	code  int
	stall time.Duration
	until time.Time // the write deadline last set
}

// extend makes the write deadline at least 3/4 stall ahead, when there is
// a stall bound: it is set stall ahead again once a quarter of it has
// passed, so that a stream of small writes does not set it every time (a
// system call each).
func (s *statusWriter) extend() {
	if s.stall <= 0 {
		return
	}
	now := time.Now()
	if s.until.Sub(now) >= s.stall-s.stall/4 {
		return
	}
	s.until = now.Add(s.stall)
	setDeadline(s.ResponseWriter, s.until, true)
}

// setDeadline sets the read (or with write, the write) deadline of w's
// connection, as http.ResponseController does but without allocating;
// writers without deadlines (tests' recorders) are left alone.
func setDeadline(w http.ResponseWriter, t time.Time, write bool) {
	for {
		switch x := w.(type) {
		case interface {
			SetReadDeadline(time.Time) error
			SetWriteDeadline(time.Time) error
		}:
			if write {
				_ = x.SetWriteDeadline(t)
			} else {
				_ = x.SetReadDeadline(t)
			}
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	s.extend()
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() { _ = s.FlushError() }

// FlushError is Flush that reports the failure of the write it makes
// (http.ResponseController uses it).
func (s *statusWriter) FlushError() error {
	if s.code == 0 {
		s.code = http.StatusOK // a flush sends the header
	}
	s.extend()
	return http.NewResponseController(s.ResponseWriter).Flush()
}
