package profile

import (
	"fmt"
	"io"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/profiles"
)

// EnvYAML renders env entries in the file form, in their order: literals
// as strings (quoted where YAML would read another type), references as
// {kind: name}. What `show` prints, `apply -f` reads back unchanged.
type EnvYAML []profiles.EnvEntry

func (es EnvYAML) MarshalYAML() (any, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, e := range es {
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e.Key}
		v := &yaml.Node{}
		if e.Ref.IsSet() {
			if err := v.Encode(map[string]string{string(e.Ref.Kind): e.Ref.Name}); err != nil {
				return nil, err
			}
			v.Style = yaml.FlowStyle
		} else if err := v.Encode(e.Literal); err != nil {
			return nil, err
		}
		m.Content = append(m.Content, k, v)
	}
	return m, nil
}

// WriteYAML prints doc after a comment with the record's revision.
func WriteYAML(w io.Writer, doc any, rev uint64, at time.Time) error {
	fmt.Fprintf(w, "# revision %d, updated %s\n", rev, cmdutil.Timestamp(at))
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}
