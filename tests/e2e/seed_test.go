package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// fastClient is a clientset without client-go's 5 QPS default.
func fastClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	kc, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return kc
}

// seedConfigMaps creates namespaces prefix-00.. with perNS ConfigMaps each
// and returns the set of "namespace/name" it created.
func seedConfigMaps(t *testing.T, cfg *rest.Config, prefix string, namespaces, perNS int) map[string]bool {
	t.Helper()
	kc := fastClient(t, cfg)
	ctx := context.Background()
	payload := strings.Repeat("x", 200)
	type job struct{ ns, name string }
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: j.ns, Labels: map[string]string{"app": "seed"}},
					Data: map[string]string{"payload": payload}}
				if _, err := kc.CoreV1().ConfigMaps(j.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	want := map[string]bool{}
	for i := range namespaces {
		ns := fmt.Sprintf("%s-%02d", prefix, i)
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		for j := range perNS {
			name := fmt.Sprintf("cm-%05d", j)
			jobs <- job{ns, name}
			want[ns+"/"+name] = true
		}
	}
	close(jobs)
	wg.Wait()
	require.NoError(t, firstErr, "seed ConfigMaps")
	return want
}

// tarballCounts reads a committed backup's resources.tar.gz and counts how
// often each object appears per group-resource, outside the
// preferred-version copies: exactly once each is what a backup must hold.
func tarballCounts(t *testing.T, s *stack, backup string) map[string]map[string]int {
	t.Helper()
	return tarballCountsAt(t, s, s.location, backup)
}

// tarballCountsAt is tarballCounts of a backup in another of the stack's
// locations.
func tarballCountsAt(t *testing.T, s *stack, locationURL, backup string) map[string]map[string]int {
	t.Helper()
	loc, err := s.locations.Open(context.Background(), locationURL)
	require.NoError(t, err)
	defer loc.Close()
	r, err := loc.NewReader(context.Background(), location.Backup(backup).Resources())
	require.NoError(t, err)
	defer r.Close()
	counts := map[string]map[string]int{}
	format, err := tarball.Walk(r, tarball.Limits{}, func(e tarball.Entry) error {
		if e.Version != "" {
			return nil
		}
		if counts[e.GroupResource] == nil {
			counts[e.GroupResource] = map[string]int{}
		}
		key := e.Name
		if e.Namespace != "" {
			key = e.Namespace + "/" + e.Name
		}
		counts[e.GroupResource][key]++
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, tarball.FormatVersion, format)
	return counts
}

// locationKeys lists every object under a backup's folder.
func locationKeys(t *testing.T, locationURL, backup string) []string {
	t.Helper()
	loc, err := location.OpenPlain(context.Background(), locationURL)
	require.NoError(t, err)
	defer loc.Close()
	keys, err := loc.Keys(context.Background(), location.Backup(backup).Prefix())
	require.NoError(t, err)
	return keys
}
