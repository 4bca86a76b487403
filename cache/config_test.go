package cache

import (
	"errors"
	"testing"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		want    Config
		wantErr bool
	}{
		{name: "zero value gets defaults", want: Config{MaxBytes: DefaultMaxBytes, MaxEntryBytes: DefaultMaxEntryBytes, RevalidateWindowSeconds: DefaultRevalidateWindowSeconds}},
		{name: "small cache caps entry size", cfg: Config{MaxBytes: 1 << 20}, want: Config{MaxBytes: 1 << 20, MaxEntryBytes: 1 << 20, RevalidateWindowSeconds: DefaultRevalidateWindowSeconds}},
		{name: "explicit values kept", cfg: Config{MaxBytes: 1 << 30, MaxEntryBytes: 1 << 10, RevalidateWindowSeconds: 5}, want: Config{MaxBytes: 1 << 30, MaxEntryBytes: 1 << 10, RevalidateWindowSeconds: 5}},
		{name: "negative max bytes", cfg: Config{MaxBytes: -1}, wantErr: true},
		{name: "negative entry bytes", cfg: Config{MaxEntryBytes: -1}, wantErr: true},
		{name: "entry larger than cache", cfg: Config{MaxBytes: 1 << 20, MaxEntryBytes: 2 << 20}, wantErr: true},
		{name: "negative window", cfg: Config{RevalidateWindowSeconds: -1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Provision()
			err := cfg.Validate()
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("Validate() = %v, want ErrInvalidConfig", err)
				}
				if _, err := New(tt.cfg, nil); !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("New() error = %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg != tt.want {
				t.Fatalf("provisioned %+v, want %+v", cfg, tt.want)
			}
		})
	}
}
