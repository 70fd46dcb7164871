/*-------------------------------------------------------------------------
 *
 * action_limits.c
 *	  Per-action limits on workers (taskq.action_grants), applied by the
 *	  SQL entry points before they call the queue.
 *
 * The public functions are SECURITY DEFINER: they run as the extension's
 * owner, so producers and workers reach taskq.tasks only through them, and
 * what each may call is decided by EXECUTE privileges (install script).  On
 * top of that, a worker may be limited to some actions: when its session
 * user, or a role the session user belongs to, has rows in
 * taskq.action_grants, own_tasks claims only tasks of those actions,
 * extend_ownership says false for tasks of other actions, and
 * return_task(s) refuses them with 42501.  Superusers and members of
 * taskq_admin are never limited.  The session user, not the current user,
 * is what counts: SET ROLE to a group that has no limit must not lift the
 * limit of the login, and inside a SECURITY DEFINER function the current
 * user is the owner anyway.
 *
 * The limit of the session user is computed once per backend and cached.
 * Triggers on taskq.action_grants send a relcache invalidation for the
 * table (cache_triggers.c); changes to role membership or role attributes send
 * catcache invalidations; each clears the cache.  So a caller that is not
 * limited pays one comparison per call, and a limited one a lookup of the
 * actions of the tasks it extends or returns (queue/task_actions.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/uuid.h"

#include "common/plan.h"
#include "queue/queue.h"
#include "api/action_limits.h"



/* The cached limit of one session user. */
typedef struct ActionLimit
{
	bool		valid;
	Oid			roleid;
	bool		limited;		/* false: may handle every action */
	int			nactions;
	char	  **actions;		/* sorted bytewise, distinct */
} ActionLimit;

static ActionLimit limit;
static MemoryContext limit_context = NULL;
static uint64 limit_invalidations = 0;
static Oid	grants_relid = InvalidOid;
static bool callbacks_registered = false;

static TaskqPlan grants_plan = {
	"SELECT g.role::pg_catalog.oid, g.action FROM taskq.action_grants AS g",
	0, {0}
};

static void
limit_invalidate(void)
{
	limit.valid = false;
	limit_invalidations++;
}

static void
limit_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == grants_relid)
		limit_invalidate();
}

static void
limit_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	limit_invalidate();
}

static int
compare_cstrings(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * Read taskq.action_grants into the cache for roleid.  The memory of the
 * previous entry is freed here, never in the callbacks, so that a caller
 * may keep using the arrays while an invalidation arrives.
 */
static void
limit_fill(Oid roleid)
{
	Oid			admin = get_role_oid("taskq_admin", true);
	MemoryContext old;

	if (limit_context == NULL)
		limit_context = AllocSetContextCreate(TopMemoryContext, "taskq action limits",
											  ALLOCSET_SMALL_SIZES);
	MemoryContextReset(limit_context);
	limit.roleid = roleid;
	limit.limited = false;
	limit.nactions = 0;
	limit.actions = NULL;
	grants_relid = get_relname_relid("action_grants",
									 get_namespace_oid("taskq", false));

	if (!OidIsValid(grants_relid) || superuser_arg(roleid) ||
		(OidIsValid(admin) && is_member_of_role(roleid, admin)))
		return;

	SPI_connect();
	taskq_execute(&grants_plan, NULL, NULL, true, 0);
	old = MemoryContextSwitchTo(limit_context);
	limit.actions = palloc(sizeof(char *) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			grantee = DatumGetObjectId(taskq_get_datum(i, 1, &isnull));

		if (!isnull && is_member_of_role(roleid, grantee))
			limit.actions[limit.nactions++] = taskq_get_text(i, 2, NULL);
	}
	MemoryContextSwitchTo(old);
	SPI_finish();

	if (limit.nactions > 1)
	{
		int			n = 1;

		qsort(limit.actions, limit.nactions, sizeof(char *), compare_cstrings);
		for (int i = 1; i < limit.nactions; i++)
			if (strcmp(limit.actions[i], limit.actions[n - 1]) != 0)
				limit.actions[n++] = limit.actions[i];
		limit.nactions = n;
	}
	limit.limited = limit.nactions > 0;
}

/* The limit of the session user, from the cache or read anew. */
static ActionLimit *
session_limit(void)
{
	Oid			roleid = GetSessionUserId();

	if (!callbacks_registered)
	{
		CacheRegisterRelcacheCallback(limit_relcache_callback, (Datum) 0);
		CacheRegisterSyscacheCallback(AUTHMEMMEMROLE, limit_syscache_callback, (Datum) 0);
		CacheRegisterSyscacheCallback(AUTHOID, limit_syscache_callback, (Datum) 0);
		callbacks_registered = true;
	}
	while (!limit.valid || limit.roleid != roleid)
	{
		uint64		seen = limit_invalidations;

		limit_fill(roleid);
		/* an invalidation that arrived while reading: read again */
		limit.valid = seen == limit_invalidations;
	}
	return &limit;
}

static bool
action_allowed(ActionLimit *l, const char *action)
{
	return bsearch(&action, l->actions, l->nactions, sizeof(char *),
				   compare_cstrings) != NULL;
}

/*
 * Of ids, the tasks whose action the limited session may not handle, as a
 * List of C strings in id order (allocated in the caller's context).
 */
static List *
foreign_tasks(ActionLimit *l, List *ids)
{
	MemoryContext outer = CurrentMemoryContext;
	List	   *result = NIL;
	ListCell   *lc;

	SPI_connect();
	foreach(lc, taskq_tasks_not_of_actions(ids, l->actions, l->nactions))
	{
		MemoryContext old = MemoryContextSwitchTo(outer);

		result = lappend(result, pstrdup(lfirst(lc)));
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return result;
}

/*
 * own_tasks: if the session is limited, replace *actions by the actions it
 * asked for that it may claim (any: all it may claim) and return true.  An
 * empty result claims nothing.  The strings are the caller's.
 */
bool
taskq_acl_limit_actions(List **actions, bool any)
{
	ActionLimit *l = session_limit();
	List	   *result = NIL;

	if (!l->limited)
		return false;
	if (any)
	{
		for (int i = 0; i < l->nactions; i++)
			result = lappend(result, pstrdup(l->actions[i]));
	}
	else
	{
		ListCell   *lc;

		foreach(lc, *actions)
			if (action_allowed(l, lfirst(lc)))
				result = lappend(result, lfirst(lc));
	}
	*actions = result;
	return true;
}

/*
 * extend_ownership: for a limited session, give each task of an action it
 * may not handle the nil UUID as token.  No task has that token (tokens are
 * version-4 UUIDs), so its lease is not extended and the call says false
 * for it, as for any task not held.
 */
void
taskq_acl_mask_tokens(List *ids, Datum *tokens)
{
	static pg_uuid_t nil_uuid;	/* all zero */
	ActionLimit *l = session_limit();
	List	   *foreign;
	ListCell   *lc;
	int			i = 0;

	if (!l->limited || ids == NIL)
		return;
	foreign = foreign_tasks(l, ids);
	if (foreign == NIL)
		return;
	foreach(lc, ids)
	{
		ListCell   *fc;

		foreach(fc, foreign)
			if (strcmp(lfirst(lc), lfirst(fc)) == 0)
				tokens[i] = UUIDPGetDatum(&nil_uuid);
		i++;
	}
}

/*
 * return_task(s): refuse (42501, naming the first such task in id order)
 * if the session is limited and a task is of an action it may not handle.
 * Unknown ids pass: the return itself reports them.
 */
void
taskq_acl_check_return(List *ids)
{
	ActionLimit *l = session_limit();
	List	   *foreign;

	if (!l->limited || ids == NIL)
		return;
	foreign = foreign_tasks(l, ids);
	if (foreign != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to return task \"%s\"",
						(char *) linitial(foreign)),
				 errdetail("Role \"%s\" may handle only tasks of the actions that taskq.action_grants lists for it.",
						   GetUserNameFromId(l->roleid, false))));
}

