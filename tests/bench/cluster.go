package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func fastClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 2000, 4000
	return kubernetes.NewForConfig(cfg)
}

// seed creates n ConfigMaps of about size bytes over namespaces named
// prefix-000.., namespaces first, with concurrency requests in flight: the
// set-up of the benchmark, and the reference a restore is measured against.
func seed(ctx context.Context, cfg *rest.Config, prefix string, n, namespaces, size, concurrency int) error {
	kc, err := fastClient(cfg)
	if err != nil {
		return err
	}
	err = parallel(namespaces, concurrency, func(i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(prefix, i)}}
		_, err := kc.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	payload := strings.Repeat("x", size)
	return parallel(n, concurrency, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", i), Namespace: nsName(prefix, i%namespaces)},
			Data: map[string]string{"payload": payload}}
		_, err := kc.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
}

func nsName(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }

// parallel calls fn for 0..n-1 with workers goroutines; an object that
// exists already is not an error.
func parallel(n, workers int, fn func(int) error) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := fn(i); err != nil && !apierrors.IsAlreadyExists(err) {
					once.Do(func() { firstErr = err })
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

// rawJSONList makes the LISTs of plainList in JSON and reads each page's
// bytes, looking only for its continue token.
func rawJSONList(ctx context.Context, cfg *rest.Config, prefix string, namespaces int, byNamespace bool) (time.Duration, error) {
	kc, err := fastClient(cfg)
	if err != nil {
		return 0, err
	}
	listIn := func(ns string) error {
		path := "/api/v1/configmaps"
		if ns != "" {
			path = "/api/v1/namespaces/" + ns + "/configmaps"
		}
		cont := ""
		for {
			req := kc.CoreV1().RESTClient().Get().AbsPath(path).Param("limit", "500").SetHeader("Accept", "application/json")
			if cont != "" {
				req = req.Param("continue", cont)
			}
			body, err := req.DoRaw(ctx)
			if err != nil {
				return err
			}
			if cont = gjson.GetBytes(body, "metadata.continue").String(); cont == "" {
				return nil
			}
		}
	}
	list := func() error {
		if !byNamespace {
			return listIn("")
		}
		for i := range namespaces {
			if err := listIn(nsName(prefix, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := list(); err != nil {
		return 0, err
	}
	start := time.Now()
	err = list()
	return time.Since(start), err
}

// plainList is the reference: paged client-go LISTs of every ConfigMap,
// limit 500 like the backup's pages, made the way the backup makes them:
// namespace by namespace when byNamespace, else cluster-wide. It is timed
// after one warm-up run.
func plainList(ctx context.Context, cfg *rest.Config, prefix string, namespaces int, byNamespace bool) (int, time.Duration, error) {
	kc, err := fastClient(cfg)
	if err != nil {
		return 0, 0, err
	}
	listIn := func(ns string) (int, error) {
		total, cont := 0, ""
		for {
			page, err := kc.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if err != nil {
				return 0, err
			}
			total += len(page.Items)
			if cont = page.Continue; cont == "" {
				return total, nil
			}
		}
	}
	list := func() (int, error) {
		if !byNamespace {
			return listIn("")
		}
		total := 0
		for i := range namespaces {
			n, err := listIn(nsName(prefix, i))
			if err != nil {
				return 0, err
			}
			total += n
		}
		return total, nil
	}
	if _, err := list(); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	n, err := list()
	return n, time.Since(start), err
}
