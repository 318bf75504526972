package worker

import (
	"go/ast"
	"go/constant"
	"go/types"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/tools/go/packages"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/datamover"
	"github.com/cairn-backup/cairn/activities/etcd"
	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/activities/hooks"
	"github.com/cairn-backup/cairn/activities/repository"
	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/activities/store"
	"github.com/cairn-backup/cairn/workflows"
)

const (
	module            = "github.com/cairn-backup/cairn"
	dataMoverActsPath = module + "/activities/datamover"
)

// recorder is a registry that keeps the names registered on it.
type recorder struct {
	sdkworker.Registry
	workflows, activities map[string]bool
}

func newRecorder() *recorder {
	return &recorder{workflows: map[string]bool{}, activities: map[string]bool{}}
}

func (r *recorder) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.workflows[o.Name] = true
}

func (r *recorder) RegisterActivity(fn any) { r.activities[workflows.ActivityName(fn)] = true }

func (r *recorder) RegisterActivityWithOptions(_ any, o activity.RegisterOptions) {
	r.activities[o.Name] = true
}

// calls is what the workflow packages reference: activities by the
// package of their implementation, and workflow names started as
// children.
type calls struct {
	activities map[string][]string // implementation package -> method names
	children   []string
	byName     []string // activities executed by a name instead of a method value
}

// workflowCalls reads the workflow packages' code (tests excluded) for
// every method value of an activities struct and every child workflow
// they start.
func workflowCalls(t *testing.T) calls {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo, Dir: ".."}
	pkgs, err := packages.Load(cfg, "./workflows/...")
	require.NoError(t, err)
	c := calls{activities: map[string][]string{}}
	for _, p := range pkgs {
		require.Empty(t, p.Errors, "loading %s", p.PkgPath)
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					sel := p.TypesInfo.Selections[n]
					if sel == nil || sel.Kind() != types.MethodVal {
						return true
					}
					if pkg, ok := activitiesPackage(sel.Recv()); ok {
						c.activities[pkg] = append(c.activities[pkg], sel.Obj().Name())
					}
				case *ast.CallExpr:
					name := calledFunc(p.TypesInfo, n)
					if len(n.Args) < 2 {
						return true
					}
					arg := p.TypesInfo.Types[n.Args[1]]
					switch name {
					case "go.temporal.io/sdk/workflow.ExecuteChildWorkflow":
						if arg.Value != nil && arg.Value.Kind() == constant.String {
							c.children = append(c.children, constant.StringVal(arg.Value))
						}
					case "go.temporal.io/sdk/workflow.ExecuteActivity":
						// ExtensionCall runs extensions' activities, which
						// no cairn process registers, by their contract's
						// names; everything else calls by method value.
						if p.PkgPath == module+"/workflows/extension" {
							return true
						}
						if b, ok := arg.Type.Underlying().(*types.Basic); ok && b.Info()&types.IsString != 0 {
							c.byName = append(c.byName, p.Fset.Position(n.Pos()).String())
						}
					}
				}
				return true
			})
		}
	}
	return c
}

// activitiesPackage is the package of recv when it is *Activities of one
// of cairn's activity packages.
func activitiesPackage(recv types.Type) (string, bool) {
	ptr, ok := recv.(*types.Pointer)
	if !ok {
		return "", false
	}
	named, ok := ptr.Elem().(*types.Named)
	if !ok || named.Obj().Name() != "Activities" || named.Obj().Pkg() == nil {
		return "", false
	}
	path := named.Obj().Pkg().Path()
	return path, strings.HasPrefix(path, module+"/activities/")
}

func calledFunc(info *types.Info, call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	fn, ok := info.Uses[sel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return ""
	}
	return fn.Pkg().Path() + "." + fn.Name()
}

// TestEveryCalledActivityIsRegistered: every activity a workflow
// references is registered in the process that runs it (the data movers'
// in the data mover, the others in the worker), every child workflow and
// every workflow name the starter uses is registered in the worker, and
// no workflow calls an activity by a bare name.
func TestEveryCalledActivityIsRegistered(t *testing.T) {
	c := workflowCalls(t)
	require.NotEmpty(t, c.activities, "the workflow packages reference no activity: the analysis is broken")
	assert.Empty(t, c.byName, "activities must be called by method value, not by name")

	w := newRecorder()
	Register(w, Activities{Cluster: &cluster.Activities{}, Store: &store.Activities{}, Restore: &restore.Activities{},
		Etcd: &etcd.Activities{}, CSI: &csi.Activities{}, Hooks: &hooks.Activities{}, Expose: &expose.Activities{},
		Repo: &repository.Activities{}})
	dm := newRecorder()
	registerDataMover(dm, &datamover.Activities{})

	for pkg, methods := range c.activities {
		process, where := w, "worker"
		if pkg == dataMoverActsPath {
			process, where = dm, "data mover"
		}
		for _, m := range methods {
			assert.True(t, process.activities[m], "%s.%s is called by a workflow but not registered in the %s", pkg, m, where)
		}
	}
	require.NotEmpty(t, c.children, "the workflow packages start no child workflow: the analysis is broken")
	for _, name := range c.children {
		assert.True(t, w.workflows[name], "child workflow %q is not registered in the worker", name)
	}
	for _, name := range workflowNames(t) {
		assert.True(t, w.workflows[name], "workflow %q is named in package v1alpha1 but not registered in the worker", name)
	}
}

// workflowNames are the values of package v1alpha1's *WorkflowName
// constants, the names the starter and parents start workflows by.
func workflowNames(t *testing.T) []string {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedTypes | packages.NeedName, Dir: ".."}, "./api/v1alpha1")
	require.NoError(t, err)
	scope := pkgs[0].Types.Scope()
	var names []string
	for _, n := range scope.Names() {
		if k, ok := scope.Lookup(n).(*types.Const); ok && strings.HasSuffix(n, "WorkflowName") {
			names = append(names, constant.StringVal(k.Val()))
		}
	}
	sort.Strings(names)
	require.NotEmpty(t, names)
	return names
}
