package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kdlbs/kandev-exec/state"
)

// KindInstallation is the store kind of the one record that names this
// store's installation on every host it touches (the ownership marker of
// each task directory).
const KindInstallation state.Kind = "installation"

// installationName is that record's name.
const installationName = "id"

// InstallationID is the store's installation ID, created as fresh the
// first time it is asked for (another process may create it first:
// theirs is the one).
func InstallationID(ctx context.Context, st state.Store, fresh string) (string, error) {
	rec, err := st.Get(ctx, KindInstallation, installationName)
	if errors.Is(err, state.ErrNotFound) {
		v := map[string]string{"id": fresh}
		if rec, err = Create(ctx, st, KindInstallation, installationName, v, state.Event{Type: "installation.created"}, nil); err != nil {
			// Another process may have created it first: read theirs.
			if rec, err = st.Get(ctx, KindInstallation, installationName); err != nil {
				return "", err
			}
		}
	} else if err != nil {
		return "", err
	}
	var v struct{ ID string }
	if err := json.Unmarshal(rec.Data, &v); err != nil || v.ID == "" {
		return "", fmt.Errorf("installation id: corrupt record in the state store")
	}
	return v.ID, nil
}
