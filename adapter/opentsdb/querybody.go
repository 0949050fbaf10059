package opentsdb

import (
	"math"
	"strconv"
	"strings"

	"github.com/promhbase/promhbase/query/tsd"
)

// parseQueryBody binds a POST /api/query body as Jackson binds a TSQuery:
// string fields take any scalar's text, flags "true" (as a literal or a
// string), unknown members skipped; a sub-query's tags and filters write
// the same list, the later member winning.
func parseQueryBody(body []byte) (*queryBody, error) {
	p := &jsonParser{b: body}
	if c := p.ws(); c != '{' {
		if c == 0 {
			return nil, errJSONEnd
		}
		return nil, p.errorf("cannot deserialize a TSQuery from '%c'", c)
	}
	b := &queryBody{}
	err := p.members(func(name string) error {
		switch name {
		case "start", "end", "timezone":
			v, err := p.scalar(name)
			if err == nil && v != nil {
				*map[string]*string{"start": &b.start, "end": &b.end, "timezone": &b.timezone}[name] = *v
			}
			return err
		case "useCalendar":
			return flag(p, name, &b.useCalendar)
		case "msResolution":
			return flag(p, name, &b.msResolution)
		case "showTSUIDs", "showQuery", "showStats", "showSummary", "delete":
			var on bool
			if err := flag(p, name, &on); err != nil || !on {
				return err
			}
			b.shows = append(b.shows, name)
			return nil
		case "queries":
			if p.ws() == 'n' {
				return p.literal("null")
			}
			b.hasQueries = true
			return p.elements(func() error {
				s, err := parseSubBody(p)
				b.subs = append(b.subs, s)
				return err
			})
		}
		return p.skip()
	})
	return b, err
}

// flag reads a boolean member: true, false, their strings, or null.
func flag(p *jsonParser, name string, dst *bool) error {
	v, err := p.scalar(name)
	if err == nil && v != nil {
		*dst = *v == "true"
	}
	return err
}

// parseSubBody binds one sub-query.
func parseSubBody(p *jsonParser) (subBody, error) {
	s := subBody{rateOptions: tsd.RateOptions{CounterMax: math.MaxInt64}}
	if c := p.ws(); c != '{' {
		return s, p.errorf("cannot deserialize a TSSubQuery from '%c'", c)
	}
	err := p.members(func(name string) error {
		switch name {
		case "aggregator", "metric", "downsample":
			v, err := p.scalar(name)
			if err == nil && v != nil {
				*map[string]*string{"aggregator": &s.aggregator, "metric": &s.metric, "downsample": &s.downsample}[name] = *v
			}
			return err
		case "rate":
			return flag(p, name, &s.rate)
		case "explicitTags":
			return flag(p, name, &s.explicitTags)
		case "tsuids":
			s.tsuids = true
			return p.skip()
		case "rateOptions":
			return parseRateOptions(p, &s.rateOptions)
		case "tags":
			s.filters, s.filterErr = nil, nil
			return parseTags(p, &s)
		case "filters":
			s.filters, s.filterErr = nil, nil
			return p.elements(func() error { return parseFilter(p, &s) })
		}
		return p.skip()
	})
	return s, err
}

// parseRateOptions binds rateOptions.
func parseRateOptions(p *jsonParser, o *tsd.RateOptions) error {
	return p.members(func(name string) error {
		switch name {
		case "counter":
			return flag(p, name, &o.Counter)
		case "dropResets":
			return flag(p, name, &o.DropResets)
		case "counterMax", "resetValue":
			v, err := p.scalar(name)
			if err != nil || v == nil {
				return err
			}
			n, err := strconv.ParseInt(*v, 10, 64)
			if err != nil {
				return p.errorf("cannot deserialize a long (field %q) from %q", name, *v)
			}
			if name == "counterMax" {
				o.CounterMax = n
			} else {
				o.ResetValue = n
			}
			return nil
		}
		return p.skip()
	})
}

// parseTags binds the old form, {tagk: expression}, as mapToFilters
// turns it into group-by filters: "*" or a value with '*' a
// case-insensitive wildcard (reported as wildcard), "type(expr)" that
// filter, anything else a literal_or; a repeated filter kept once.
func parseTags(p *jsonParser, s *subBody) error {
	return p.members(func(k string) error {
		v, err := p.scalar(k)
		if err != nil || v == nil {
			return err
		}
		switch {
		case k == "":
			s.filterErr = messageError("Tagk cannot be null or empty")
		case *v == "":
			s.filterErr = messageError("Filter cannot be null or empty")
		}
		f := mapFilter(k, *v, true)
		if err := tsd.CheckFilter(f); err != nil && s.filterErr == nil {
			s.filterErr = err
		}
		for _, e := range s.filters {
			if e == f {
				return nil
			}
		}
		s.filters = append(s.filters, f)
		return nil
	})
}

// stripParentheses is the expression inside "type(expr)".
func stripParentheses(v string) string {
	i := strings.IndexByte(v, '(')
	j := strings.LastIndexByte(v, ')')
	if j < i {
		return v[i+1:]
	}
	return v[i+1 : j]
}

// parseFilter binds one {type, tagk, filter, groupBy}.
func parseFilter(p *jsonParser, s *subBody) error {
	var f tsd.Filter
	err := p.members(func(name string) error {
		switch name {
		case "type", "tagk", "filter":
			v, err := p.scalar(name)
			if err == nil && v != nil {
				*map[string]*string{"type": &f.Type, "tagk": &f.Tagk, "filter": &f.Expr}[name] = *v
			}
			return err
		case "groupBy":
			return flag(p, name, &f.GroupBy)
		}
		return p.skip()
	})
	if err != nil {
		return err
	}
	switch {
	case f.Type == "":
		s.filterErr = messageError("The filter type cannot be null or empty")
	case f.Tagk == "":
		s.filterErr = messageError("Tagk cannot be null or empty")
	}
	f.Type = strings.ToLower(f.Type)
	if err := tsd.CheckFilter(f); err != nil && s.filterErr == nil {
		s.filterErr = err
	}
	s.filters = append(s.filters, f)
	return nil
}
