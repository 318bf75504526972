package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is where the webhook answers.
const Path = "/admission/v1alpha1/resources"

// Handler answers the API server's admission reviews; namespace is
// cairn's own, where resources act as the worker and reach anywhere.
func Handler(namespace string, log *zap.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, &admission.Webhook{Handler: &identityRecorder{namespace: namespace, log: log}})
	return mux
}

// Serve serves Handler over TLS on ln until ctx ends. The API server
// calls it; nothing else needs to, and its answers grant nothing by
// themselves.
func Serve(ctx context.Context, ln net.Listener, cert tls.Certificate, namespace string, log *zap.Logger) error {
	srv := &http.Server{
		Handler:           Handler(namespace, log),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	log.Info("Admission webhook listening", zap.String("address", "https://"+ln.Addr().String()+Path))
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("admission webhook: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stop admission webhook: %w", err)
	}
	return nil
}
