package main

import (
	"context"
	"log"
	"path/filepath"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/cairn-backup/cairn/internal/csistate"
)

// registration tells the kubelet where the driver listens, through the
// kubelet's plugin registration directory: the job node-driver-registrar
// does beside other drivers.
type registration struct {
	registerapi.UnimplementedRegistrationServer
	endpoint string
	logger   *log.Logger
}

func (r registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: csistate.DriverName, Endpoint: r.endpoint,
		SupportedVersions: []string{"1.0.0"}}, nil
}

func (r registration) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if st.PluginRegistered {
		r.logger.Print("registered with the kubelet")
	} else {
		r.logger.Printf("the kubelet refused the registration: %s", st.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// serveRegistration serves the registration socket in dir until the
// returned stop is called.
func serveRegistration(dir, endpoint string, logger *log.Logger) (stop func(), err error) {
	socket := filepath.Join(dir, csistate.DriverName+"-reg.sock")
	lis, err := listenUnix(socket)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, registration{endpoint: endpoint, logger: logger})
	go func() { _ = srv.Serve(lis) }()
	logger.Printf("registration socket %s", socket)
	return srv.Stop, nil
}
