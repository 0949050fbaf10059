package ruler

import (
	"context"
	"errors"

	"github.com/prometheus/prometheus/model/rulefmt"
)

// The rules table's family, qualifiers and row kinds (see the package doc).
const (
	Family       = "r"
	QualGroup    = "group"
	QualLease    = "lease"
	QualLast     = "last"
	rowKindGroup = 'g'
	rowKindLease = 'l'
	// rowKindMember rows announce the replicas evaluating rules (lease.go).
	rowKindMember = 'm'
	keySeparator  = 0x00
)

// ErrGroupNotFound is returned for a rule group or namespace that is not
// stored.
var ErrGroupNotFound = errors.New("rule group not found")

// GroupStore is where one tenant's rule groups live (RuleStore, over the
// tenant's namespace of the store, is the one implementation).
type GroupStore interface {
	// ListGroups returns every group of the tenant by rule namespace, the
	// groups of a namespace in name order.
	ListGroups(ctx context.Context) (map[string][]rulefmt.RuleGroup, error)
	// GetGroup returns one group; ErrGroupNotFound when it is not stored.
	GetGroup(ctx context.Context, namespace, group string) (rulefmt.RuleGroup, error)
	// SetGroup stores g under namespace, replacing a group of the same
	// name. The caller has validated it.
	SetGroup(ctx context.Context, namespace string, g rulefmt.RuleGroup) error
	// DeleteGroup deletes one group (and its lease row); ErrGroupNotFound
	// when it is not stored.
	DeleteGroup(ctx context.Context, namespace, group string) error
	// DeleteNamespace deletes every group of a namespace; ErrGroupNotFound
	// when it has none.
	DeleteNamespace(ctx context.Context, namespace string) error
}
