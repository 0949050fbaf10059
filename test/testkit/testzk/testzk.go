// Package testzk is a fake ZooKeeper holding an HBase cluster's znodes,
// for the tests of what reads them (hbase.Probe) without HBase: it speaks
// enough of ZooKeeper's protocol for go-zookeeper's client (the session
// handshake, getData, pings, close). Only tests import it.
package testzk

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/proto"
)

// Listen returns a loopback listener, closed when the test ends. Nothing
// accepts its connections: the kernel completes them, which is all a
// probe of HBase's servers asks.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// ClosedAddr returns a loopback host:port nobody listens on (it was free
// a moment ago).
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l := Listen(t)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// server is the fake: its znodes, and the connections to close at the
// end.
type server struct {
	ln    net.Listener
	nodes map[string][]byte
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

// Start serves nodes (path -> data) on a loopback address until the test
// ends, and returns the address: a quorum of one server. A znode not in
// nodes does not exist.
func Start(t testing.TB, nodes map[string][]byte) string {
	t.Helper()
	z := &server{ln: Listen(t), nodes: nodes}
	z.wg.Go(z.accept)
	t.Cleanup(func() {
		z.ln.Close()
		z.mu.Lock()
		for _, c := range z.conns {
			c.Close()
		}
		z.mu.Unlock()
		z.wg.Wait()
	})
	return z.ln.Addr().String()
}

func (z *server) accept() {
	for {
		c, err := z.ln.Accept()
		if err != nil {
			return
		}
		z.mu.Lock()
		z.conns = append(z.conns, c)
		z.mu.Unlock()
		z.wg.Go(func() { z.serve(c) })
	}
}

func readPacket(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

func writePacket(w io.Writer, body []byte) error {
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	if err == nil {
		_, err = w.Write(body)
	}
	return err
}

// ZooKeeper's opcodes and error codes the fake answers.
const (
	opGetData  = 4
	opPing     = 11
	opClose    = -11
	errNoNode  = -101
	errUnimpl  = -6
	statLength = 68
)

func (z *server) serve(c net.Conn) {
	defer c.Close()
	if _, err := readPacket(c); err != nil { // the connect request
		return
	}
	resp := binary.BigEndian.AppendUint32(nil, 0)     // protocol version
	resp = binary.BigEndian.AppendUint32(resp, 10000) // session timeout, ms
	resp = binary.BigEndian.AppendUint64(resp, 1)     // session id
	resp = binary.BigEndian.AppendUint32(resp, 16)    // password
	resp = append(resp, make([]byte, 16)...)
	if writePacket(c, resp) != nil {
		return
	}
	for {
		req, err := readPacket(c)
		if err != nil || len(req) < 8 {
			return
		}
		xid, op := binary.BigEndian.Uint32(req), int32(binary.BigEndian.Uint32(req[4:]))
		header := func(code int32) []byte {
			h := binary.BigEndian.AppendUint32(nil, xid)
			h = binary.BigEndian.AppendUint64(h, 1) // zxid
			return binary.BigEndian.AppendUint32(h, uint32(code))
		}
		switch op {
		case opGetData:
			if len(req) < 12 {
				return
			}
			n := int(binary.BigEndian.Uint32(req[8:]))
			if n < 0 || 12+n > len(req) {
				return
			}
			data, ok := z.nodes[string(req[12:12+n])]
			if !ok {
				err = writePacket(c, header(errNoNode))
				break
			}
			b := binary.BigEndian.AppendUint32(header(0), uint32(len(data)))
			b = append(b, data...)
			err = writePacket(c, append(b, make([]byte, statLength)...))
		case opPing:
			err = writePacket(c, header(0))
		case opClose:
			_ = writePacket(c, header(0))
			return
		default:
			err = writePacket(c, header(errUnimpl))
		}
		if err != nil {
			return
		}
	}
}

// znode is a znode of HBase naming addr as HBase writes it: 0xFF, the
// metadata's length and the metadata, "PBUF", then msg (made by mk from
// the server's name).
func znode(t testing.TB, addr string, mk func(*pb.ServerName) proto.Message) []byte {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.ParseUint(port, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	body, err := proto.Marshal(mk(&pb.ServerName{HostName: proto.String(host), Port: proto.Uint32(uint32(p)), StartCode: proto.Uint64(1)}))
	if err != nil {
		t.Fatal(err)
	}
	meta := []byte("id-of-the-writer")
	b := append([]byte{0xFF}, binary.BigEndian.AppendUint32(nil, uint32(len(meta)))...)
	b = append(b, meta...)
	b = append(b, "PBUF"...)
	return append(b, body...)
}

// MetaZnode is HBase's meta-region-server znode naming addr (host:port)
// as the region server of hbase:meta.
func MetaZnode(t testing.TB, addr string) []byte {
	return znode(t, addr, func(s *pb.ServerName) proto.Message { return &pb.MetaRegionServer{Server: s} })
}

// MasterZnode is HBase's master znode naming addr (host:port) as the
// active master.
func MasterZnode(t testing.TB, addr string) []byte {
	return znode(t, addr, func(s *pb.ServerName) proto.Message { return &pb.Master{Master: s} })
}
