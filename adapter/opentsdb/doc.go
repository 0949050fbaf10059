// Package opentsdb speaks OpenTSDB 2.4.1's write protocols as a TSD does:
// telnet's put lines and HTTP's /api/put bodies parsed into points, each
// point refused with the TSD's own words, the answers in its JSON, and the
// port that serves both (Port: a TSD tells telnet from HTTP by the first
// byte of a connection); /api/suggest's questions and answers, and the
// catalog a TSD lists (aggregators, filter types, its version).
//
// A point is stored as the TSD stores it (mapping.EncodedSample): in the
// resolution it was sent in (a second or a millisecond qualifier) and
// with the value's type and width the TSD picks from its text (an integer
// on the fewest bytes; a float on 4 bytes when float32 holds it exactly,
// else on 8).
//
// The TSD's messages quote Java: a tag map prints as a java.util.HashMap
// does ({k=v, k2=v2} in its bucket order), JSON as Jackson writes it.
// ../shared/notes/opentsdb-api.md §2-3 has the protocol; this package's
// tests hold each message to the TSD's.
package opentsdb
