package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/backup"
	"github.com/svcplatform/platform/controlplane/store"
)

const backupUsage = `usage: platform backup [--out] FILE [--data DIR] [--store URL] [--seal-key-file FILE]

Writes the whole installation to FILE (a .tar.gz; - for stdout): the
metadata database, customer databases and vector collections (each a
consistent SQLite snapshot), blobs, keys and the local CA. It runs while
the platform serves: everything acknowledged before it began is in it.
Restore it with platform restore, on this machine or another.

  --out FILE            where the archive goes (or the first argument)
  --data DIR            the data directory (env PLATFORM_DATA, default ./data)
  --store URL           the metadata database (env PLATFORM_STORE): with
                        postgres://... the archive holds the rest of the data
                        directory only; back PostgreSQL up with pg_dump
  --seal-key-file FILE  the seal key when it lives outside DIR (env PLATFORM_SEAL_KEY_FILE)
  --blobs LOCATION      (env PLATFORM_BLOBS) blobs on S3 are not in the archive

example:
  platform backup --data /var/lib/platform --out /backups/platform-$(date +%F).tar.gz`

const restoreUsage = `usage: platform restore [--in] FILE --data DIR

Restores an archive written by platform backup into DIR, which must be
empty or not exist (a fresh data directory; nothing is overwritten). Every
file is checked against the archive's manifest before any is put in place.
Then start the platform on it: platform serve --data DIR.

  --in FILE    the archive (or the first argument; - for stdin)
  --data DIR   the new data directory (env PLATFORM_DATA, default ./data)`

// runBackup is `platform backup`: 0 done, 1 failed, 2 bad usage.
func runBackup(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("platform backup", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	data := envOr("PLATFORM_DATA", "./data")
	fset.StringVar(&data, "data", data, "")
	out := fset.String("out", "", "")
	dsn := fset.String("store", os.Getenv("PLATFORM_STORE"), "")
	sealKey := fset.String("seal-key-file", os.Getenv("PLATFORM_SEAL_KEY_FILE"), "")
	blobsAt := fset.String("blobs", os.Getenv("PLATFORM_BLOBS"), "")
	file, code := parseFileArgs(fset, args, out, backupUsage, stderr)
	if code >= 0 {
		return code
	}
	src := backup.Source{DataDir: data, SealKeyFile: *sealKey, MetadataElsewhere: store.IsPostgresDSN(*dsn), Platform: platformVersion(),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if *dsn != "" && !src.MetadataElsewhere && !sameDB(*dsn, filepath.Join(data, backup.MetadataDB)) {
		fmt.Fprintf(stderr, "platform backup: --store %s is not DIR/platform.db: back up its directory with --data\n", *dsn)
		return 2
	}
	m, err := writeBackup(context.Background(), src, file, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "platform backup: %v\n", err)
		return 1
	}
	info := stdout
	if file == "-" {
		info = stderr
	}
	fmt.Fprintf(info, "backed up %d files (%s) of %s to %s\n", len(m.Files), humanBytes(m.Bytes()), data, file)
	if len(m.Skipped) > 0 {
		fmt.Fprintf(info, "left out %d file(s) that changed while being copied: %s\n", len(m.Skipped), strings.Join(m.Skipped, ", "))
	}
	if src.MetadataElsewhere {
		fmt.Fprintln(info, "the metadata is in PostgreSQL and not in the archive: back it up with pg_dump at the same time")
	}
	if strings.HasPrefix(*blobsAt, "s3://") {
		fmt.Fprintf(info, "blobs live in %s and are not in the archive: keep that bucket (or its versioning) as their backup\n", *blobsAt)
	}
	return 0
}

// writeBackup writes the archive to file (a temporary file renamed into
// place, so a failed backup leaves no partial archive) or stdout for "-".
func writeBackup(ctx context.Context, src backup.Source, file string, stdout io.Writer) (backup.Manifest, error) {
	if file == "-" {
		return backup.Create(ctx, src, stdout)
	}
	absData, err1 := filepath.Abs(src.DataDir)
	absOut, err2 := filepath.Abs(file)
	if err1 == nil && err2 == nil && strings.HasPrefix(absOut, absData+string(filepath.Separator)) {
		return backup.Manifest{}, fmt.Errorf("%s is inside the data directory %s: write the archive elsewhere", file, src.DataDir)
	}
	f, err := os.CreateTemp(filepath.Dir(absOut), "."+filepath.Base(absOut)+".tmp-*")
	if err != nil {
		return backup.Manifest{}, err
	}
	defer os.Remove(f.Name())
	m, err := backup.Create(ctx, src, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), absOut)
	}
	return m, err
}

// runRestore is `platform restore`: 0 done, 1 failed, 2 bad usage.
func runRestore(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("platform restore", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	data := envOr("PLATFORM_DATA", "./data")
	fset.StringVar(&data, "data", data, "")
	in := fset.String("in", "", "")
	file, code := parseFileArgs(fset, args, in, restoreUsage, stderr)
	if code >= 0 {
		return code
	}
	r := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintf(stderr, "platform restore: %v\n", err)
			return 1
		}
		defer f.Close()
		r = f
	}
	m, err := backup.Restore(context.Background(), r, data)
	if err != nil {
		fmt.Fprintf(stderr, "platform restore: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "restored %d files (%s) into %s from a backup made %s by platform %s\n",
		len(m.Files), humanBytes(m.Bytes()), data, m.CreatedAt.Format(time.RFC3339), m.Platform)
	fmt.Fprintf(stdout, "start it with: platform serve --data %s (the same --apps-domain and --public-url as before; the owner keys are the old ones)\n", data)
	return 0
}

// parseFileArgs parses a command whose one file comes as a flag (named by
// flagVal) or as its first argument; it returns the file, or an exit code
// (>= 0) to return at once.
func parseFileArgs(fset *flag.FlagSet, args []string, flagVal *string, usage string, stderr io.Writer) (string, int) {
	var pos []string
	for len(args) > 0 {
		if err := fset.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(stderr, usage)
				return "", 0
			}
			fmt.Fprintf(stderr, "%s: %v\n%s\n", fset.Name(), err, usage)
			return "", 2
		}
		args = fset.Args()
		if len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	file := *flagVal
	switch {
	case len(pos) > 1 || len(pos) == 1 && file != "":
		fmt.Fprintf(stderr, "%s: one archive, please (got %q)\n%s\n", fset.Name(), append(pos, file), usage)
		return "", 2
	case len(pos) == 1:
		file = pos[0]
	case file == "":
		fmt.Fprintf(stderr, "%s: name the archive\n%s\n", fset.Name(), usage)
		return "", 2
	}
	return file, -1
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func sameDB(a, b string) bool {
	x, err1 := filepath.Abs(a)
	y, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && x == y
}

// humanBytes is n in B, KiB, MiB or GiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}
