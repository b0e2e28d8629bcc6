package profiles

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/kb-bench/kb-bench/spec"
)

// shipped holds the profiles kb-bench ships, one NAME.yaml per profile. An
// embedded file system can only be a package-level variable; it is read-only.
//
//go:embed *.yaml
var shipped embed.FS

// Names returns the names of the shipped profiles, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(shipped, ".") // cannot fail: the root of an embed.FS
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// ShippedYAML returns the YAML of the shipped profile name, as shipped.
func ShippedYAML(name string) ([]byte, error) {
	if !slices.Contains(Names(), name) {
		return nil, spec.Input(fmt.Errorf("no shipped profile is called %q: use one of %s (kb-bench profiles list)",
			name, strings.Join(Names(), ", ")))
	}
	data, err := shipped.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("read shipped profile %q: %w", name, err)
	}
	return data, nil
}

// Shipped loads the shipped profile name.
func Shipped(name string, resolve Resolver) (*Profile, error) {
	data, err := ShippedYAML(name)
	if err != nil {
		return nil, err
	}
	p, err := parse(path.Join("profiles", name+".yaml"), data, resolve)
	if err != nil { // not the user's input: exit status 1
		return nil, fmt.Errorf("shipped profile %q is broken (a kb-bench bug): %w", name, err)
	}
	return p, nil
}

// List loads every shipped profile, sorted by name, for its name and
// description: their specs are checked by this package's tests.
func List() ([]*Profile, error) {
	var out []*Profile
	var errs []error
	for _, name := range Names() {
		p, err := Shipped(name, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}
