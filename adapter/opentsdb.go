package adapter

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/promhbase/promhbase/adapter/opentsdb"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/query/tsd"
)

// OpenTSDBPutPath is the path of OpenTSDB's HTTP put, served on the
// OpenTSDB port (opentsdb.Port) and on promhbase's own, as
// VictoriaMetrics serves it.
const OpenTSDBPutPath = opentsdb.PutPath

// OpenTSDBSuggestPath is the path of OpenTSDB's /api/suggest.
const OpenTSDBSuggestPath = opentsdb.SuggestPath

// OpenTSDBQueryPath is the path of OpenTSDB's /api/query.
const OpenTSDBQueryPath = opentsdb.QueryPath

// OpenTSDBLookupPath is the path of OpenTSDB's /api/search/lookup.
const OpenTSDBLookupPath = opentsdb.LookupPath

// OpenTSDBOptions configure OpenTSDB's put (telnet lines and /api/put).
type OpenTSDBOptions struct {
	// AutoCreateMetrics is tsd.core.auto_create_metrics: a point of a
	// metric without a UID makes one. Off, such a point is refused
	// ("unknown metric"), as a TSD refuses it by default. Tag names and
	// values always get UIDs.
	AutoCreateMetrics bool
	// MaxTags is tsd.storage.max_tags (opentsdb.DefaultMaxTags when 0).
	MaxTags int
	// MetricExists reports whether a metric has a UID; it must be set
	// unless AutoCreateMetrics.
	MetricExists func(ctx context.Context, metric string) (bool, error)
	// Names answers /api/suggest: the names of a UID kind ("metrics",
	// "tagk", "tagv") whose forward rows in the UID table lie in [start,
	// stop), in row order, at most max (0: all); nil: /api/suggest
	// answers 404 as an unknown endpoint.
	Names func(ctx context.Context, kind string, start, stop []byte, max int) ([][]byte, error)
	// Query answers /api/query (tsd.Evaluator.Eval); nil: /api/query
	// answers 404 as an unknown endpoint.
	Query func(ctx context.Context, q tsd.Query) ([]tsd.Result, error)
	// Lookup answers /api/search/lookup (tsd.Evaluator.Lookup); nil:
	// /api/search/lookup answers 404 as an unknown endpoint.
	Lookup func(ctx context.Context, q tsd.LookupQuery) ([]tsd.LookupSeries, error)
}

// PutPoints stores the points of OpenTSDB puts (opentsdb.Writer): each
// metric looked up unless metrics are made on first use, then the points
// of each series written as one request, each in the cell a TSD writes
// (mapping.EncodedSample). A point that can never be stored gets its
// error in errs; an error return is the store's trouble (nothing may be
// assumed stored).
func (h *Handler) PutPoints(ctx context.Context, pts []opentsdb.Point, errs []*opentsdb.PointError) error {
	if err := h.checkMetrics(ctx, pts, errs); err != nil {
		return err
	}
	groups := groupSeries(pts, errs)
	if len(groups) == 0 {
		return nil
	}
	res, err := h.writeGroups(ctx, pts, groups)
	h.count(res)
	var rej *ingest.RejectError
	if !errors.As(err, &rej) {
		return err
	}
	// Some series can never be stored: which, each written alone tells
	// (writing a stored one again writes the same cells).
	for _, g := range groups {
		res, err := h.writeGroups(ctx, pts, []putSeries{g})
		h.count(res)
		switch {
		case errors.As(err, &rej):
			for _, i := range g.points {
				errs[i] = opentsdb.Refused(err.Error())
			}
		case err != nil:
			return err
		}
	}
	return nil
}

// checkMetrics refuses the points whose metric has no UID when metrics
// are not made on first use.
func (h *Handler) checkMetrics(ctx context.Context, pts []opentsdb.Point, errs []*opentsdb.PointError) error {
	o := h.opts.OpenTSDB
	if o.AutoCreateMetrics {
		return nil
	}
	if o.MetricExists == nil {
		return errors.New("opentsdb put: no metric lookup configured")
	}
	known := map[string]bool{}
	for i := range pts {
		if errs[i] != nil {
			continue
		}
		m := pts[i].Metric
		ok, seen := known[m]
		if !seen {
			var err error
			if ok, err = o.MetricExists(ctx, m); err != nil {
				return fmt.Errorf("look up metric %q: %w", m, err)
			}
			known[m] = ok
		}
		if !ok {
			errs[i] = opentsdb.UnknownMetric(m)
		}
	}
	return nil
}

// putSeries is the points of one series of a put: its remote-write key
// and the indexes of its points.
type putSeries struct {
	key    []byte
	points []int
}

// groupSeries groups the points without an error by series, in the
// order each series first comes.
func groupSeries(pts []opentsdb.Point, errs []*opentsdb.PointError) []putSeries {
	var groups []putSeries
	index := map[string]int{}
	var lbls []opentsdb.Tag
	var key []byte
	for i := range pts {
		if errs[i] != nil {
			continue
		}
		p := &pts[i]
		lbls = append(append(lbls[:0], opentsdb.Tag{Key: mapping.MetricLabel, Value: p.Metric}), p.Tags...)
		for j := 1; j < len(lbls); j++ { // insertion sort: a handful of tags
			for k := j; k > 0 && lbls[k-1].Key > lbls[k].Key; k-- {
				lbls[k-1], lbls[k] = lbls[k], lbls[k-1]
			}
		}
		key = key[:0]
		for _, l := range lbls {
			key = wire.AppendLabel(key, l.Key, l.Value)
		}
		g, ok := index[string(key)]
		if !ok {
			g = len(groups)
			k := string(key)
			index[k] = g
			groups = append(groups, putSeries{key: []byte(k)})
		}
		groups[g].points = append(groups[g].points, i)
	}
	return groups
}

// writeGroups writes the groups' points (points of pts, by the groups'
// indexes into them) as one request.
func (h *Handler) writeGroups(ctx context.Context, pts []opentsdb.Point, groups []putSeries) (ingest.Result, error) {
	n := 0
	for _, g := range groups {
		n += len(g.points)
	}
	var s wire.Series
	return h.w.WriteDecoded(ctx, n, func(fn func(*wire.Series) error) error {
		for _, g := range groups {
			s.Key, s.Encoded = g.key, s.Encoded[:0]
			for _, i := range g.points {
				s.Encoded = append(s.Encoded, pts[i].Sample)
			}
			if err := fn(&s); err != nil {
				return err
			}
		}
		return nil
	})
}

// servePutTSD serves OpenTSDB's /api/put as a synchronous TSD put does
// (PutDataPointRpc, ../shared/notes/opentsdb-api.md §3): POST only; a
// body of one point or an array (gzip or zstd as Content-Encoding),
// bounded as a remote write's; each point checked, the good ones stored
// before the answer, the answer in the TSD's codes and JSON (summary,
// details, sync_timeout as flags by their presence). What differs: the
// answer always waits for the store (with or without sync), and the
// store's trouble is a 503 (429 for a rate limit) to retry, where a TSD
// would have answered before writing and lost the points.
func (h *Handler) servePutTSD(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return writeTSD(w, http.StatusMethodNotAllowed, opentsdb.ErrorBody(http.StatusMethodNotAllowed, "Method not allowed",
			"The HTTP method ["+r.Method+"] is not permitted for this endpoint"))
	}
	body, done, err := h.slotAndBody(r, h.readOTLPBody)
	if err != nil {
		code := statusFor(err)
		return answered(writeTSD(w, code, opentsdb.ErrorBody(code, err.Error(), "")), err)
	}
	defer done()
	items, err := opentsdb.ParsePutBody(body, cmp.Or(h.opts.OpenTSDB.MaxTags, opentsdb.DefaultMaxTags))
	var berr *opentsdb.BodyError
	if errors.As(err, &berr) {
		return answered(writeTSD(w, http.StatusBadRequest, opentsdb.ErrorBody(http.StatusBadRequest, berr.Message, berr.Details)),
			fmt.Errorf("%w: %w", errBadRequest, err))
	}
	pts := make([]opentsdb.Point, len(items))
	errs := make([]*opentsdb.PointError, len(items))
	for i := range items {
		pts[i], errs[i] = items[i].Point, items[i].Err
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.WriteTimeout)
	defer cancel()
	if err := h.PutPoints(ctx, pts, errs); err != nil {
		code := statusFor(err)
		if code < 500 && code != http.StatusTooManyRequests {
			code = http.StatusServiceUnavailable
		}
		setErrorHeaders(w.Header(), code, err)
		return answered(writeTSD(w, code, opentsdb.ErrorBody(code, "Storage exception: "+err.Error(), "")), err)
	}
	for i := range items {
		items[i].Err = errs[i]
	}
	status, answer := opentsdb.PutAnswer(putParams(r), items)
	return writeTSD(w, status, answer)
}

// readTSDBody reads r's body, at most limit bytes; when it cannot, it
// answers the request (413 past the limit, 400 otherwise, in the TSD's
// error JSON) and returns nil and the answer's error (what names the
// request in the log).
func readTSDBody(w http.ResponseWriter, r *http.Request, limit int64, what string) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err == nil {
		if body == nil {
			body = []byte{} // not nil, even when empty
		}
		return body, nil
	}
	code := http.StatusBadRequest
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		code = http.StatusRequestEntityTooLarge
	}
	return nil, answered(writeTSD(w, code, opentsdb.ErrorBody(code, "Unable to read the request body", err.Error())),
		fmt.Errorf("%w: %s body: %w", errBadRequest, what, err))
}

// maxSuggestBody bounds the body of /api/suggest: a JSON object of three
// short strings.
const maxSuggestBody = 64 << 10

// serveSuggestTSD serves OpenTSDB's /api/suggest as a TSD does
// (SuggestRpc, ../shared/notes/opentsdb-api.md §5): the names of a kind
// with a prefix, from the UID table's forward rows in byte order. The
// store's trouble is a 503 to retry.
func (h *Handler) serveSuggestTSD(w http.ResponseWriter, r *http.Request) error {
	names := h.opts.OpenTSDB.Names
	if names == nil {
		return writeTSD(w, http.StatusNotFound, opentsdb.ErrorBody(http.StatusNotFound, "Endpoint not found", ""))
	}
	body, err := readTSDBody(w, r, maxSuggestBody, "suggest")
	if body == nil {
		return err
	}
	s, herr := opentsdb.ParseSuggest(r.Method, r.URL.Query(), body)
	if herr != nil {
		return answered(writeTSD(w, herr.Code, herr.Body()), fmt.Errorf("%w: %w", errBadRequest, herr))
	}
	var found [][]byte
	if bytes.Compare(s.Start, s.Stop) < 0 {
		ctx, cancel := context.WithTimeout(r.Context(), h.opts.WriteTimeout)
		defer cancel()
		if found, err = names(ctx, s.Kind, s.Start, s.Stop, s.Max); err != nil {
			code := http.StatusServiceUnavailable
			setErrorHeaders(w.Header(), code, err)
			return answered(writeTSD(w, code, opentsdb.ErrorBody(code, "Storage exception: "+err.Error(), "")), err)
		}
	}
	return writeTSD(w, http.StatusOK, opentsdb.SuggestBody(found))
}

// maxQueryBody bounds the body of /api/query.
const maxQueryBody = 1 << 20

// serveQueryTSD serves OpenTSDB's /api/query as a TSD does (QueryRpc,
// ../shared/notes/opentsdb-api.md §4): GET's m= sub-queries or POST's
// JSON body validated with the TSD's messages, evaluated by package tsd,
// answered in its JSON (?arrays, ?ms); the store's trouble is a 503 to
// retry.
func (h *Handler) serveQueryTSD(w http.ResponseWriter, r *http.Request) error {
	eval := h.opts.OpenTSDB.Query
	if eval == nil {
		return writeTSD(w, http.StatusNotFound, opentsdb.ErrorBody(http.StatusNotFound, "Endpoint not found", ""))
	}
	params := r.URL.Query()
	var req opentsdb.QueryRequest
	var herr *opentsdb.HTTPError
	switch r.Method {
	case http.MethodGet:
		req, herr = opentsdb.ParseQueryGET(params, time.Now())
	case http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxQueryBody))
		if err != nil {
			return answered(writeTSD(w, http.StatusRequestEntityTooLarge, opentsdb.ErrorBody(http.StatusRequestEntityTooLarge, "Unable to read the request body", err.Error())),
				fmt.Errorf("%w: query body: %w", errBadRequest, err))
		}
		req, herr = opentsdb.ParseQuery(body, time.Now(), params.Has("arrays"), params.Has("ms"))
	default:
		herr = &opentsdb.HTTPError{Code: http.StatusMethodNotAllowed, Message: "Method not allowed",
			Details: "The HTTP method [" + r.Method + "] is not permitted for this endpoint"}
	}
	if herr != nil {
		return answered(writeTSD(w, herr.Code, herr.Body()), fmt.Errorf("%w: %w", errBadRequest, herr))
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.WriteTimeout)
	defer cancel()
	rs, err := eval(ctx, req.Query)
	var qerr *tsd.Error
	switch {
	case errors.As(err, &qerr):
		return answered(writeTSD(w, qerr.Status(), opentsdb.ErrorBody(qerr.Status(), qerr.Message, qerr.Message)), fmt.Errorf("%w: %w", errBadRequest, err))
	case err != nil:
		code := http.StatusServiceUnavailable
		setErrorHeaders(w.Header(), code, err)
		return answered(writeTSD(w, code, opentsdb.ErrorBody(code, "Storage exception: "+err.Error(), "")), err)
	}
	return writeTSD(w, http.StatusOK, opentsdb.QueryAnswer(req, rs))
}

// maxLookupBody bounds the body of /api/search/lookup.
const maxLookupBody = 1 << 20

// serveLookupTSD serves OpenTSDB's /api/search/lookup as a TSD does
// (SearchRpc.processLookup, ../shared/notes/opentsdb-meta.md §2): GET's
// m and limit or POST's SearchQuery, the series found by package tsd,
// answered in the TSD's JSON; a name without a UID is its 404 "Unable
// to resolve one or more UIDs", the store's trouble a 503 to retry.
func (h *Handler) serveLookupTSD(w http.ResponseWriter, r *http.Request) error {
	lookup := h.opts.OpenTSDB.Lookup
	if lookup == nil {
		return writeTSD(w, http.StatusNotFound, opentsdb.ErrorBody(http.StatusNotFound, "Endpoint not found", ""))
	}
	body, err := readTSDBody(w, r, maxLookupBody, "lookup")
	if body == nil {
		return err
	}
	req, herr := opentsdb.ParseLookup(r.Method, r.URL.Query(), body)
	if herr != nil {
		return answered(writeTSD(w, herr.Code, herr.Body()), fmt.Errorf("%w: %w", errBadRequest, herr))
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.WriteTimeout)
	defer cancel()
	start := time.Now()
	found, err := lookup(ctx, req.Query)
	var qerr *tsd.Error
	var uerr *tsd.NoSuchUIDError
	switch {
	case errors.As(err, &qerr):
		return answered(writeTSD(w, http.StatusNotFound, opentsdb.ErrorBody(http.StatusNotFound, "Unable to resolve one or more UIDs", qerr.Message)),
			fmt.Errorf("%w: %w", errBadRequest, err))
	case errors.As(err, &uerr):
		return answered(writeTSD(w, http.StatusNotFound, opentsdb.ErrorBody(http.StatusNotFound, "Unable to resolve one or more TSUIDs", uerr.Message)), err)
	case err != nil:
		code := http.StatusServiceUnavailable
		setErrorHeaders(w.Header(), code, err)
		return answered(writeTSD(w, code, opentsdb.ErrorBody(code, "Storage exception: "+err.Error(), "")), err)
	}
	return writeTSD(w, http.StatusOK, opentsdb.LookupBody(req, found, time.Since(start).Milliseconds()))
}

// putParams reads /api/put's flags: present means on, whatever the value.
func putParams(r *http.Request) opentsdb.PutParams {
	q := r.URL.Query()
	p := opentsdb.PutParams{Summary: q.Has("summary"), Details: q.Has("details"), Sync: q.Has("sync")}
	if v := q.Get("sync_timeout"); v != "" {
		p.SyncTimeout, _ = strconv.Atoi(v)
	}
	return p
}

// writeTSD writes an answer of the TSD's: JSON, or nothing for a 204.
func writeTSD(w http.ResponseWriter, code int, body []byte) error {
	if code != http.StatusNoContent {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	}
	w.WriteHeader(code)
	if len(body) == 0 {
		return nil // a 204 may have no body, not even an empty write
	}
	_, err := w.Write(body)
	return err
}

// answered marks err as answered already (instrument counts and logs it
// and writes nothing more); a failed write of the answer wins.
func answered(writeErr, err error) error {
	if writeErr != nil {
		return writeErr
	}
	return answeredError{err}
}
