package location

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
)

// Lock is the location's immutability, nil when it has none.
func (l *Location) Lock() *Lock { return l.lock }

// writerOptions lock the objects of a finished backup in an immutable
// location: S3 refuses to delete or overwrite the version written until
// the retention date, whoever asks.
func (l *Location) writerOptions(key string) *blob.WriterOptions {
	if l.lock == nil || !locked(key) {
		return nil
	}
	mode, until := tmtypes.ObjectLockMode(l.lock.Mode), l.lock.Until(time.Now())
	return &blob.WriterOptions{BeforeWrite: func(as func(any) bool) error {
		var in *transfermanager.UploadObjectInput
		if !as(&in) {
			return fmt.Errorf("backup location %s: object lock needs an S3 bucket", Display(l.URL))
		}
		in.ObjectLockMode, in.ObjectLockRetainUntilDate = mode, &until
		return nil
	}}
}

// s3Client is the location's S3 client and bucket name; ok is false for
// a location that is not S3.
func (l *Location) s3Client() (client *s3.Client, bucket string, ok bool) {
	if !l.bucket.As(&client) {
		return nil, "", false
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		return nil, "", false
	}
	return client, u.Host, true
}

// CheckLock checks that an immutable location's bucket can lock what is
// written: Object Lock enabled on it, and versioning on, which Object
// Lock needs. A location without a lock passes.
func (l *Location) CheckLock(ctx context.Context) error {
	if l.lock == nil {
		return nil
	}
	client, bucket, ok := l.s3Client()
	if !ok {
		return fmt.Errorf("backup location %s is immutable, which needs an S3 bucket", Display(l.URL))
	}
	notEnabled := fmt.Errorf("backup location %s is declared immutable, but Object Lock is not enabled on its bucket %s (it is enabled when a bucket is created)", Display(l.URL), bucket)
	cfg, err := client.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(bucket)})
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.ErrorCode() == "ObjectLockConfigurationNotFoundError":
		return notEnabled
	case err != nil:
		return fmt.Errorf("backup location %s: read the Object Lock configuration of bucket %s: %w", Display(l.URL), bucket, err)
	case cfg.ObjectLockConfiguration == nil || cfg.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled:
		return notEnabled
	}
	v, err := client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil {
		return fmt.Errorf("backup location %s: read the versioning of bucket %s: %w", Display(l.URL), bucket, err)
	}
	if v.Status != types.BucketVersioningStatusEnabled {
		return fmt.Errorf("backup location %s is declared immutable, but versioning is not enabled on its bucket %s", Display(l.URL), bucket)
	}
	return nil
}

// RetainedUntil is when the lock on key's current version ends, as the
// store has it; zero when it is not locked, or the location is not S3.
func (l *Location) RetainedUntil(ctx context.Context, key string) (time.Time, error) {
	attrs, err := l.bucket.Attributes(ctx, key)
	if err != nil {
		return time.Time{}, wrapNotFound(key, err)
	}
	var head s3.HeadObjectOutput
	if !attrs.As(&head) || head.ObjectLockRetainUntilDate == nil {
		return time.Time{}, nil
	}
	return *head.ObjectLockRetainUntilDate, nil
}

// PurgeVersions deletes, in an immutable location, every version and
// delete marker left under prefix: there a delete only hides an object
// behind a marker, and the backup would go on filling the bucket. A
// version still locked is refused by the store. Other locations keep no
// versions, so it does nothing there.
func (l *Location) PurgeVersions(ctx context.Context, prefix string) (int, error) {
	if l.lock == nil {
		return 0, nil
	}
	client, bucket, ok := l.s3Client()
	if !ok {
		return 0, nil
	}
	purged := 0
	pages := s3.NewListObjectVersionsPaginator(client, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return purged, fmt.Errorf("list the versions under %s: %w", prefix, err)
		}
		var ids []types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		for _, id := range ids {
			_, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: id.Key, VersionId: id.VersionId})
			var notFound *types.NoSuchKey
			if err != nil && !errors.As(err, &notFound) {
				return purged, fmt.Errorf("delete version %s of %s: %w", aws.ToString(id.VersionId), aws.ToString(id.Key), err)
			}
			purged++
		}
	}
	return purged, nil
}
