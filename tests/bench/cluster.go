package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

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

// seed creates n ConfigMaps of about size bytes over namespaces.
func seed(ctx context.Context, cfg *rest.Config, n, namespaces, size int) error {
	kc, err := fastClient(cfg)
	if err != nil {
		return err
	}
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%03d", i)}}
		if _, err := kc.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	payload := strings.Repeat("x", size)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", i), Namespace: fmt.Sprintf("bench-%03d", i%namespaces)},
					Data: map[string]string{"payload": payload}}
				if _, err := kc.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
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

// plainList is the reference: a paged client-go LIST of every ConfigMap,
// limit 500 like the backup's pages, timed after one warm-up run.
func plainList(ctx context.Context, cfg *rest.Config) (int, time.Duration, error) {
	kc, err := fastClient(cfg)
	if err != nil {
		return 0, 0, err
	}
	list := func() (int, error) {
		total, cont := 0, ""
		for {
			page, err := kc.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if err != nil {
				return 0, err
			}
			total += len(page.Items)
			if cont = page.Continue; cont == "" {
				return total, nil
			}
		}
	}
	if _, err := list(); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	n, err := list()
	return n, time.Since(start), err
}
