package replica

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy forwards TCP connections to a server and can freeze the ones open
// so far: they stay connected but carry nothing, like a peer that died
// without closing (a pulled cable). Connections made later work normally.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frozen []chan struct{} // one per connection; closed to unfreeze on cleanup
	live   []chan struct{} // freeze signals of open connections
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		freeze := make(chan struct{})
		p.mu.Lock()
		p.live = append(p.live, freeze)
		p.conns = append(p.conns, up, down)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(up, down, freeze)
		go p.pipe(down, up, freeze)
	}
}

// pipe copies until either side fails or the connection is frozen; a frozen
// pipe keeps both sockets open and reads nothing more.
func (p *proxy) pipe(dst, src net.Conn, freeze chan struct{}) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-freeze:
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}
			return
		}
	}
}

// freeze stops every connection open now.
func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.live {
		close(f)
	}
	p.live = nil
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
