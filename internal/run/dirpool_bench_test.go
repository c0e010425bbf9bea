package run

import "testing"

func BenchmarkRunDir(b *testing.B) {
	ctx := Request{Contexts: []byte(`[{"binding":"b","type":"Event"}]`)}.contextsWriter()
	b.Run("new", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			d, err := newRunDir(dir, ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.remove(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		d, err := newRunDir(b.TempDir(), ctx)
		if err != nil {
			b.Fatal(err)
		}
		if !d.reset() {
			b.Fatal("not reset")
		}
		for b.Loop() {
			if err := d.writeContexts(ctx); err != nil {
				b.Fatal(err)
			}
			if !d.reset() {
				b.Fatal("not reset")
			}
		}
	})
}
