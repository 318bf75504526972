package devserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/cairn-backup/cairn/internal/clock"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.uber.org/zap"
)

// uiStartTimeout bounds the wait for the UI to answer its health check.
const uiStartTimeout = 30 * time.Second

// webUI is a running Temporal Web UI.
type webUI struct {
	srv  *uiserver.Server
	url  string
	done chan struct{} // closed when the serving goroutine returns
}

// uiConfig serves the embedded UI assets on addr for the frontend at
// frontendAddr. Nothing is fetched from the internet (no news, no version
// check), so pages render offline.
func uiConfig(addr hostPort, frontendAddr, namespace string) *uiconfig.Config {
	origins := []string{"http://" + addr.dialAddr()}
	if addr.IP == loopback {
		origins = append(origins, "http://localhost:"+strconv.Itoa(addr.Port))
	}
	return &uiconfig.Config{
		TemporalGRPCAddress: frontendAddr,
		Host:                addr.IP,
		Port:                addr.Port,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		CORS: uiconfig.CORS{
			AllowOrigins: origins,
			// Plain HTTP on localhost: the CSRF cookie cannot be Secure.
			CookieInsecure: true,
		},
		DisableNewsFetch:   true,
		NotifyOnNewVersion: false,
		HideLogs:           true,
	}
}

// startUI serves the Web UI and waits until it answers. The port must have
// been checked free just before: the UI server ends the process with a
// fatal log if it cannot listen.
func startUI(ctx context.Context, log *zap.Logger, cfg *uiconfig.Config) (ui *webUI, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("ui config: %w", err)
	}
	defer func() {
		// NewServer panics on bad configuration or missing assets.
		if r := recover(); r != nil {
			err = fmt.Errorf("create ui server: %v", r)
		}
	}()
	srv := uiserver.NewServer(uiserveroptions.WithConfigProvider(cfg))
	addr := hostPort{IP: cfg.Host, Port: cfg.Port}
	ui = &webUI{srv: srv, url: "http://" + addr.dialAddr(), done: make(chan struct{})}
	go func() {
		defer close(ui.done)
		if err := srv.Start(); err != nil {
			log.Error("web ui stopped", zap.Error(err))
		}
	}()
	if err := waitHTTP(ctx, ui.url+"/healthz"); err != nil {
		ui.stop()
		return nil, fmt.Errorf("start web ui on %s: %w", addr, err)
	}
	return ui, nil
}

// stop closes the UI's listener and waits for it to return.
func (u *webUI) stop() {
	u.srv.Stop()
	<-u.done
}

// waitHTTP polls url until it answers 200.
func waitHTTP(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, uiStartTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	var lastErr error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		lastErr = err
		if err := clock.Sleep(ctx, pollInterval); err != nil {
			return fmt.Errorf("%w (last error: %w)", err, lastErr)
		}
	}
}
