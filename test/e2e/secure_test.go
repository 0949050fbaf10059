package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// secureWriter is Prometheus A of TestTLSAndBasicAuth: it scrapes itself
// and promhbase (over TLS with basic auth) and remote-writes to promhbase
// with basic_auth, and to a second queue with a wrong password.
var secureWriter = template.Must(template.New("A").Parse(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ['{{.Self}}']
  - job_name: promhbase
    scheme: https
    basic_auth: {username: prom, password: '{{.Password}}'}
    tls_config: {ca_file: '{{.CA}}', cert_file: '{{.ClientCert}}', key_file: '{{.ClientKey}}'}
    static_configs:
      - targets: ['{{.Promhbase}}']
remote_write:
  - name: good
    url: 'https://{{.Promhbase}}/api/v1/write'
    basic_auth: {username: prom, password: '{{.Password}}'}
    tls_config: {ca_file: '{{.CA}}', cert_file: '{{.ClientCert}}', key_file: '{{.ClientKey}}'}
    queue_config: {batch_send_deadline: 1s, min_backoff: 100ms, max_backoff: 1s}
  - name: wrong-password
    url: 'https://{{.Promhbase}}/api/v1/write'
    basic_auth: {username: prom, password: 'not-it'}
    tls_config: {ca_file: '{{.CA}}', cert_file: '{{.ClientCert}}', key_file: '{{.ClientKey}}'}
    queue_config: {batch_send_deadline: 1s, min_backoff: 100ms, max_backoff: 1s}
`))

// secureReader is Prometheus B: it reads only through promhbase, over TLS,
// with basic auth whose password is in a file. (Prometheus refuses an
// authorization section of type Basic.)
var secureReader = template.Must(template.New("B").Parse(`remote_read:
  - url: 'https://{{.Promhbase}}/api/v1/read'
    read_recent: true
    basic_auth: {username: prom, password_file: '{{.PasswordFile}}'}
    tls_config: {ca_file: '{{.CA}}', cert_file: '{{.ClientCert}}', key_file: '{{.ClientKey}}'}
`))

// tlsFiles holds the paths of a test CA and of the certificates it signed.
type tlsFiles struct {
	ca, serverCert, serverKey, clientCert, clientKey string
	pool                                             *x509.CertPool
	client                                           tls.Certificate
}

// newTLSFiles writes a self-signed CA, a server certificate for 127.0.0.1
// and a client certificate, both signed by the CA, into dir.
func newTLSFiles(t *testing.T, dir string) tlsFiles {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	writePEM := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "promhbase test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	// sign writes a certificate of the CA for tmpl and its key; it returns
	// their paths and the pair.
	sign := func(name string, tmpl *x509.Certificate) (string, string, tls.Certificate) {
		key := newKey()
		tmpl.NotBefore, tmpl.NotAfter, tmpl.KeyUsage = now.Add(-time.Hour), now.Add(24*time.Hour), x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(name+".pem", "CERTIFICATE", der), writePEM(name+".key", "EC PRIVATE KEY", keyDER),
			tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	f := tlsFiles{ca: writePEM("ca.pem", "CERTIFICATE", caDER), pool: x509.NewCertPool()}
	f.pool.AddCert(ca)
	f.serverCert, f.serverKey, _ = sign("server", &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "promhbase"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	f.clientCert, f.clientKey, f.client = sign("client", &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "prometheus"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return f
}

// TestTLSAndBasicAuth runs promhbase with a web configuration file (TLS
// with client certificates required, a bcrypt basic-auth user, a security
// header) and real Prometheus servers against it, each presenting a client
// certificate: A remote-writes with basic_auth and tls_config and scrapes
// promhbase over TLS; B reads through remote_read with basic auth from a
// password file. A's queue with a wrong password gets 401 and drops its
// samples; requests without credentials, with wrong ones, over plain HTTP
// or without a client certificate are refused.
func TestTLSAndBasicAuth(t *testing.T) {
	t.Parallel()
	bin := prometheusBinary(t)
	promhbase := testproc.BuildBinary(t, testproc.Root(t, "cmd/promhbase"))
	dir := t.TempDir()
	tf := newTLSFiles(t, dir)
	const password = "s3cret pass"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, `tls_server_config:
  cert_file: %s
  key_file: %s
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: %s
basic_auth_users:
  prom: '%s'
http_server_config:
  headers:
    Strict-Transport-Security: max-age=31536000
`, tf.serverCert, tf.serverKey, tf.ca, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testproc.FreeAddr(t)
	args := append([]string{"serve", "--web.listen-address=" + addr, "--web.config.file=" + webConfig}, testbackend.ServeFlags(t)...)
	srv := testproc.Start(t, "promhbase", exec.Command(promhbase, args...), filepath.Join(t.TempDir(), "promhbase.log"), 40)
	base := "https://" + addr
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tf.pool, Certificates: []tls.Certificate{tf.client}}}}
	get := func(path, user, pass string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	poll.Until(t, time.Minute, 200*time.Millisecond, "ready over TLS", func() (bool, string) {
		resp, body := get("/-/ready", "prom", password) //nolint:bodyclose // get closed the body
		return resp != nil && resp.StatusCode == http.StatusOK, body + "\n" + srv.Log()
	})

	// Refusals, and the header on every answer.
	for _, tc := range []struct{ name, path, user, pass string }{
		{"no credentials, write", "/api/v1/write", "", ""},
		{"no credentials, read", "/api/v1/read", "", ""},
		{"wrong password", "/api/v1/write", "prom", "not-it"},
		{"unknown user", "/metrics", "root", password},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+tc.path, strings.NewReader("x"))
		if tc.user != "" {
			req.SetBasicAuth(tc.user, tc.pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Strict-Transport-Security") != "max-age=31536000" {
			t.Errorf("%s: %d, Strict-Transport-Security %q; want 401 and the header", tc.name, resp.StatusCode, resp.Header.Get("Strict-Transport-Security"))
		}
	}
	if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP answered 200")
		}
	}
	noCert := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tf.pool}}}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/-/ready", nil)
	req.SetBasicAuth("prom", password)
	if resp, err := noCert.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("a client without a certificate got %d", resp.StatusCode)
	} else {
		t.Logf("a client without a certificate: %v", err)
	}

	vars := map[string]string{"Promhbase": addr, "CA": tf.ca, "ClientCert": tf.clientCert, "ClientKey": tf.clientKey, "Password": password,
		"PasswordFile": filepath.Join(dir, "password")}
	if err := os.WriteFile(vars["PasswordFile"], []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startPrometheus(t, bin, "A", secureWriter, func(listen string) map[string]string {
		v := map[string]string{"Self": listen}
		for k, x := range vars {
			v[k] = x
		}
		return v
	})
	b := startPrometheus(t, bin, "B", secureReader, func(string) map[string]string { return vars })

	// Wait until A's good queue has sent samples and its wrong-password
	// queue has failed some.
	page := testproc.WaitMetrics(t, a.base, 90*time.Second, "sent by A's good queue and failed by its wrong-password one", func(page testproc.MetricPage) (bool, string) {
		good, wrong := page.Sum("prometheus_remote_storage_samples_total", "remote_name", "good"), page.Sum("prometheus_remote_storage_samples_failed_total", "remote_name", "wrong-password")
		return good > 0 && wrong > 0, fmt.Sprintf("good sent %v, wrong-password failed %v\n%s", good, wrong, testproc.Tail(a.proc.LogPath, 20))
	})
	t.Logf("A: good queue sent %v samples (failed %v, retried %v); wrong-password queue failed %v (sent %v)",
		page.Sum("prometheus_remote_storage_samples_total", "remote_name", "good"),
		page.Sum("prometheus_remote_storage_samples_failed_total", "remote_name", "good"),
		page.Sum("prometheus_remote_storage_samples_retried_total", "remote_name", "good"),
		page.Sum("prometheus_remote_storage_samples_failed_total", "remote_name", "wrong-password"),
		page.Sum("prometheus_remote_storage_samples_total", "remote_name", "wrong-password"))
	if f := page.Sum("prometheus_remote_storage_samples_failed_total", "remote_name", "good"); f != 0 {
		t.Errorf("good queue: %v samples failed", f)
	}

	// B reads, over TLS with basic auth, what A wrote:
	// A's scrape of promhbase over TLS with basic auth.
	poll.Until(t, 60*time.Second, time.Second, `up{job="promhbase"} 1 in B`, func() (bool, string) {
		res, err := b.api.query(t.Context(), promQuery{expr: `up{job="promhbase"}`, at: time.Now()})
		if err == nil && upIsOne(res) {
			t.Logf("B over remote read: %s", res.summary())
			return true, ""
		}
		return false, fmt.Sprintf("%v, %v\n%s", res.summary(), err, testproc.Tail(b.proc.LogPath, 20))
	})
	// A request is counted when its handler returns, which can be after
	// its samples are readable (the embedded store's cells are visible
	// before the write waits on its log's fsync) and after its client has
	// the answer (a read flushes what it streams): the counts are polled
	// for.
	// When the bound passes, the checks below say what is missing.
	var body string
	_ = poll.Wait(t.Context(), 30*time.Second, 200*time.Millisecond, "counted", func() (bool, string, error) {
		var resp *http.Response
		resp, body = get("/metrics", "prom", password) //nolint:bodyclose // get closed the body
		if resp == nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics with credentials: %v %s", resp, body)
		}
		return strings.Contains(body, `promhbase_http_requests_total{code="204",handler="write"}`) &&
			strings.Contains(body, `promhbase_http_requests_total{code="200",handler="read"}`), "", nil
	})
	for _, bad := range []string{`promhbase_http_requests_total{code="401",handler="write"}`, `promhbase_http_requests_total{code="401",handler="read"}`} {
		if strings.Contains(body, bad) {
			t.Errorf("/metrics has %s: the auth layer should answer before the handler", bad)
		}
	}
	for _, want := range []string{`promhbase_http_requests_total{code="204",handler="write"}`, `promhbase_http_requests_total{code="200",handler="read"}`,
		`promhbase_limits{limit="max_label_names_per_series"} 30`, `promhbase_limits{limit="new_series_rate"} 50000`,
		`promhbase_samples_rejected_total{reason="new_series_rate"} 0`, `promhbase_uid_headroom{kind="tagv"}`, "promhbase_active_series "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// upIsOne reports whether res is one series whose one point is 1.
func upIsOne(res promResult) bool {
	for _, pts := range res.series {
		return len(res.series) == 1 && len(pts) == 1 && pts[0].v == 1
	}
	return false
}
