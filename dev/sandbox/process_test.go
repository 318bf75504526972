package sandbox

import (
	"slices"
	"strings"
	"testing"
)

func TestChildEnvDropsKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "/home/someone/.kube/config")
	t.Setenv("CAIRN_SANDBOX_TEST_KEPT", "yes")
	env := childEnv()
	if i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") }); i >= 0 {
		t.Fatalf("child environment has %s: a sidecar would talk to that cluster", env[i])
	}
	if !slices.Contains(env, "CAIRN_SANDBOX_TEST_KEPT=yes") {
		t.Fatal("child environment lost other variables")
	}
}
