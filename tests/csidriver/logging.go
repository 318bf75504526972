package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxSummary bounds the request and response text of a log line.
const maxSummary = 2000

// logCalls logs each call as one line: the method, the request, and the
// response or the error, and how long it took.
func logCalls(logger *log.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		took := time.Since(start).Round(time.Microsecond)
		method := strings.TrimPrefix(info.FullMethod, "/csi.v1.")
		if err != nil {
			st := status.Convert(err)
			logger.Printf("%s {%s} -> error %s: %s (%v)", method, summary(req), st.Code(), st.Message(), took)
		} else {
			logger.Printf("%s {%s} -> {%s} (%v)", method, summary(req), summary(resp), took)
		}
		return resp, err
	}
}

// summary is m in one line of protobuf text, without the fields the CSI spec
// marks as secrets.
func summary(m any) string {
	pm, ok := m.(proto.Message)
	if !ok {
		return fmt.Sprint(m)
	}
	pm = proto.Clone(pm)
	var secrets []protoreflect.FieldDescriptor
	pm.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if secret, _ := proto.GetExtension(fd.Options(), csi.E_CsiSecret).(bool); secret {
			secrets = append(secrets, fd)
		}
		return true
	})
	for _, fd := range secrets {
		pm.ProtoReflect().Clear(fd)
	}
	s := prototext.MarshalOptions{}.Format(pm)
	if len(s) > maxSummary {
		s = s[:maxSummary] + "..."
	}
	return s
}
