package e2e

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/stretchr/testify/require"
)

// Azurite's well-known development account, the same on every machine.
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// azuriteServer is Azure's storage emulator (Azurite, from npm, installed
// by `make test`) serving blobs on 127.0.0.1.
type azuriteServer struct {
	t    *testing.T
	addr string
}

func azuriteBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("CAIRN_AZURITE")
	if bin == "" {
		bin = filepath.Join("..", "..", ".cache", "tools", "azurite-3.37.0", "node_modules", ".bin", "azurite-blob")
	}
	_, err := os.Stat(bin)
	require.NoError(t, err, "Azurite is missing: `make test` installs it")
	return bin
}

// startAzurite starts Azurite's blob service and waits until it listens.
// Its telemetry, on by default, would reach for Azure's servers.
func startAzurite(t *testing.T) *azuriteServer {
	t.Helper()
	addr := freePort(t)
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	p := startBinary(t, "azurite", azuriteBin(t), nil, "--blobHost", host, "--blobPort", port, "--location", t.TempDir(),
		"--silent", "--skipApiVersionCheck", "--loose", "--disableTelemetry")
	waitServing(t, p, listening(addr))
	return &azuriteServer{t: t, addr: addr}
}

// container creates a container and returns the location URL of it, in
// the form a real account has: the account in the host name,
// devstoreaccount1.blob.localhost:PORT, which the test's localhost proxy
// resolves (azureEnv). The account and key come from the environment, as
// gocloud.dev reads them.
func (a *azuriteServer) container(name string) string {
	a.t.Helper()
	cred, err := azblob.NewSharedKeyCredential(azuriteAccount, azuriteKey)
	require.NoError(a.t, err)
	c, err := azblob.NewClientWithSharedKeyCredential("http://"+a.addr+"/"+azuriteAccount, cred, nil)
	require.NoError(a.t, err)
	_, err = c.CreateContainer(context.Background(), name, nil)
	require.NoError(a.t, err)
	_, port, err := net.SplitHostPort(a.addr)
	require.NoError(a.t, err)
	q := url.Values{"domain": {"blob.localhost:" + port}, "protocol": {"http"}}
	return "azblob://" + name + "?" + q.Encode()
}

// azureEnv is the environment of the processes an Azure test starts
// (workers, and through them their data movers): Azurite's account and
// key, and the localhost proxy that resolves the account's host name.
// This process has the proxy already (startLocalhostProxy), and takes
// the account and key into its own environment: gocloud.dev reads them
// from there, once per process. Only azblob:// locations read them, and
// only this test opens one, so setting them does not touch the tests
// that run beside it (t.Setenv would forbid running beside them).
func azureEnv() []string {
	os.Setenv("AZURE_STORAGE_ACCOUNT", azuriteAccount)
	os.Setenv("AZURE_STORAGE_KEY", azuriteKey)
	return []string{"AZURE_STORAGE_ACCOUNT=" + azuriteAccount, "AZURE_STORAGE_KEY=" + azuriteKey,
		"HTTP_PROXY=" + localhostProxy, "NO_PROXY=", "no_proxy="}
}
