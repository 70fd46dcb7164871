/*-------------------------------------------------------------------------
 *
 * graph.c
 *	  The dependency graph: the lock that serialises changes to edges between
 *	  stored tasks, the cycle check run under it, edges added between stored
 *	  tasks, and the workflow locks (which workflows were cancelled is
 *	  cancel.c's).
 *
 * add_dependencies with an after that already finished: for a run task
 * whose trigger rule is all_success a completion is satisfied and an abort
 * refused, as before 0.5; for another rule the edge is added and counted
 * at once with its outcome (signal.c decides the rule).
 *
 * Lock order: workflow locks (in key order), then the graph lock, then task
 * rows in id order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/snapmgr.h"

#include "common/args.h"
#include "common/pg_compat.h"
#include "common/plan.h"
#include "queue/cancel.h"
#include "queue/queue_internal.h"

/* Advisory lock key of the dependency graph: ("task", "q\0\0\0"). */
/*
 * The advisory locks of taskq: key1 "task", and key2 "q\0\0\0" for the
 * dependency graph or the hash of a workflow key for a workflow lock.
 */
#define TASKQ_LOCK_CLASS 0x7461736B
#define GRAPH_LOCK_KEY2 0x71000000

static TaskqPlan lock_tasks_plan = {
	"SELECT id, status_code::text, performance_token IS NULL, to_signal_after,"
	"       \"trigger\" OPERATOR(pg_catalog.=) 'all_success'::taskq.trigger_rule"
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) ANY ($1)"
	" ORDER BY id FOR UPDATE",
	1, {TEXTARRAYOID}
};

/* Legacy (queue.h, taskq_schema_at_least_0_5): before 0.5 every task is all_success. */
static TaskqPlan legacy_lock_tasks_plan = {
	"SELECT id, status_code::text, performance_token IS NULL, to_signal_after, true"
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) ANY ($1)"
	" ORDER BY id FOR UPDATE",
	1, {TEXTARRAYOID}
};

static TaskqPlan add_successors_plan = {
	"UPDATE taskq.tasks"
	"   SET to_signal_after = COALESCE(to_signal_after, '{}'::text[]) OPERATOR(pg_catalog.||) $2"
	" WHERE id OPERATOR(pg_catalog.=) $1",
	2, {TEXTOID, TEXTARRAYOID}
};

static TaskqPlan successors_plan = {
	"SELECT to_signal_after FROM taskq.tasks"
	" WHERE id OPERATOR(pg_catalog.=) $1"
	"   AND status_code OPERATOR(pg_catalog.<) 'completed'::taskq.status",
	1, {TEXTOID}
};

void
taskq_lock_dependency_graph(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, TASKQ_LOCK_CLASS, GRAPH_LOCK_KEY2, 2);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

typedef struct NodeEntry
{
	char		id[TASKQ_MAX_ID_LEN + 1];
	char	   *code;			/* add_dependencies: state of a locked task */
	bool		unowned;
	List	   *succs;			/* add_dependencies: its to_signal_after */
	List	   *new_succs;		/* add_dependencies: edges to add */
	int32		new_signals;
	bool		all_success;	/* add_dependencies: its rule is all_success */
} NodeEntry;

/* add_dependencies: an edge from a task that has already finished. */
typedef struct FinishedEdge
{
	char	   *after;
	char	   *run;
	TaskqStatus outcome;
} FinishedEdge;

static HTAB *
make_node_table(const char *name)
{
	HASHCTL		ctl;

	ctl.keysize = TASKQ_MAX_ID_LEN + 1;
	ctl.entrysize = sizeof(NodeEntry);
	ctl.hcxt = CurrentMemoryContext;
	return hash_create(name, 64, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

/*
 * Refuse if following to_signal_after of unfinished tasks from id leads
 * back to id.  Run after the new edges are written, under the graph lock.
 */
void
taskq_check_no_cycle_through(const char *id)
{
	HTAB	   *seen = make_node_table("taskq cycle check");
	List	   *stack = list_make1(pstrdup(id));
	bool		first = true;

	/* Make the edges this call just wrote visible to the walk. */
	CommandCounterIncrement();

	while (stack != NIL)
	{
		char	   *cur = llast(stack);
		Datum		arg;
		List	   *succs;
		ListCell   *lc;
		bool		found;

		stack = list_delete_last(stack);
		if (!first)
		{
			if (strcmp(cur, id) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("dependency cycle through task \"%s\"", id),
						 errdetail("Following to_signal_after from task \"%s\" leads back to it.",
								   id)));
			hash_search(seen, cur, HASH_ENTER, &found);
			if (found)
				continue;
		}
		first = false;
		CHECK_FOR_INTERRUPTS();

		/*
		 * Read with the latest snapshot, not the statement's or the
		 * transaction's: the walk must see the edges this call just wrote
		 * and those committed before we got the graph lock, in any
		 * isolation level (in REPEATABLE READ the transaction snapshot may
		 * predate another call's edges that close the cycle).
		 */
		arg = CStringGetTextDatum(cur);
		PushActiveSnapshot(GetLatestSnapshot());
		taskq_execute(&successors_plan, &arg, NULL, true, 0);
		PopActiveSnapshot();
		if (SPI_processed == 0)
			continue;
		succs = taskq_get_text_array(0, 1);
		foreach(lc, succs)
			stack = lappend(stack, lfirst(lc));
	}
}

/*
 * Make each runs[i] wait for afters[i]; the rules of add_dependencies.
 * Returns the number of dependencies added.  SPI must be connected.
 */
int64
taskq_add_dependency_pairs(List *afters, List *runs)
{
	List	   *all;
	HTAB	   *nodes;
	ListCell   *la,
			   *lr;
	int64		added = 0;
	HASH_SEQ_STATUS seq;
	NodeEntry  *e;
	List	   *run_nodes = NIL;
	List	   *finished = NIL;

	Assert(list_length(afters) == list_length(runs));
	if (afters == NIL)
		return 0;
	forboth(la, afters, lr, runs)
		if (strcmp(lfirst(la), lfirst(lr)) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("task \"%s\" cannot wait for itself", (char *) lfirst(la))));

	taskq_lock_dependency_graph();

	/* Lock every task named, in id order. */
	all = list_concat_copy(afters, runs);
	{
		Datum		arg = taskq_text_array_datum(all);

		taskq_execute(taskq_schema_at_least_0_5() ? &lock_tasks_plan : &legacy_lock_tasks_plan,
					  &arg, NULL, false, 0);
	}
	nodes = make_node_table("taskq add_dependencies");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		e = hash_search(nodes, taskq_get_text(i, 1, NULL), HASH_ENTER, NULL);
		e->code = taskq_get_text(i, 2, NULL);
		e->unowned = taskq_get_bool(i, 3, &isnull);
		e->succs = taskq_get_text_array(i, 4);
		e->new_succs = NIL;
		e->new_signals = 0;
		e->all_success = taskq_get_bool(i, 5, NULL);
	}

	forboth(la, afters, lr, runs)
	{
		char	   *after = lfirst(la);
		char	   *run = lfirst(lr);
		NodeEntry  *a = hash_search(nodes, after, HASH_FIND, NULL);
		NodeEntry  *r = hash_search(nodes, run, HASH_FIND, NULL);

		if (a == NULL || r == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					 errmsg("task \"%s\" named in argument \"%s\" does not exist",
							a == NULL ? after : run,
							a == NULL ? "after_ids" : "run_ids")));
		if (strcmp(r->code, "pending") != 0 || !r->unowned)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("task \"%s\" has already %s", run,
							strcmp(r->code, "pending") == 0 ||
							strcmp(r->code, "in_progress") == 0 ? "started" : "finished"),
					 errdetail("A new dependency can only be added to a task that has not started.")));
		if (strcmp(a->code, "completed") == 0 && r->all_success)
			continue;			/* already satisfied */
		if (strcmp(a->code, "aborted") == 0 && r->all_success)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("task \"%s\" cannot wait for task \"%s\", which was aborted",
							run, after),
					 errhint("A task whose trigger rule is all_done, one_failed or one_success can.")));
		if (taskq_string_member(a->succs, run) || taskq_string_member(a->new_succs, run))
			continue;			/* it waits for it already */
		a->new_succs = lappend(a->new_succs, run);
		added++;
		if (strcmp(a->code, "completed") == 0 || strcmp(a->code, "aborted") == 0)
		{
			/* another rule: the outcome counts at once (below) */
			FinishedEdge *f = palloc(sizeof(FinishedEdge));

			f->after = after;
			f->run = run;
			f->outcome = taskq_status_from_label(a->code);
			finished = lappend(finished, f);
			continue;
		}
		if (r->new_signals++ == 0)
			run_nodes = lappend(run_nodes, r);
	}

	hash_seq_init(&seq, nodes);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		Datum		values[2];

		values[0] = CStringGetTextDatum(e->id);
		if (e->new_succs != NIL)
		{
			values[1] = taskq_text_array_datum(e->new_succs);
			taskq_execute(&add_successors_plan, values, NULL, false, 0);
		}
		if (e->new_signals > 0)
		{
			(void) taskq_signal_add_edges(e->id, e->new_signals, false);
		}
	}

	foreach(lr, finished)
	{
		FinishedEdge *f = lfirst(lr);

		taskq_signal_finished_edge(f->after, f->run, f->outcome);
	}
	foreach(lr, run_nodes)
		taskq_check_no_cycle_through(((NodeEntry *) lfirst(lr))->id);

	return added;
}


void
taskq_lock_workflow(const char *workflow, bool exclusive)
{
	LOCKTAG		tag;
	uint32		h = hash_bytes((const unsigned char *) workflow, strlen(workflow));

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, TASKQ_LOCK_CLASS, h, 2);
	/* a run's own calls insert its steps under its exclusive lock: it covers them */
	if (!exclusive && taskq_lock_held_by_me(&tag, ExclusiveLock))
		return;
	(void) LockAcquire(&tag, exclusive ? ExclusiveLock : ShareLock, false, false);
}

/*
 * The workflow's lock, exclusive, if nobody holds it (the background
 * worker's timers: they do not wait behind a run's caller): false if taken.
 */
bool
taskq_try_lock_workflow(const char *workflow)
{
	LOCKTAG		tag;
	uint32		h = hash_bytes((const unsigned char *) workflow, strlen(workflow));

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, TASKQ_LOCK_CLASS, h, 2);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Take the workflow locks of what is about to make tasks of these workflows
 * runnable (insert, redrive) — shared, in name order, before any row lock —
 * and return those of the workflows that were cancelled (cancel.c).  Under
 * these locks cancel_workflow, which takes them exclusively, either sees the
 * tasks or is seen: a task of a cancelled workflow never runs, however the
 * two race.
 */
List *
taskq_lock_workflows(List *names)
{
	List	   *sorted = NIL;
	ListCell   *lc;

	foreach(lc, names)
		if (!taskq_string_member(sorted, lfirst(lc)))
			sorted = lappend(sorted, lfirst(lc));
	if (sorted == NIL)
		return NIL;
	list_sort(sorted, taskq_compare_strings_lc);
	foreach(lc, sorted)
		taskq_lock_workflow(lfirst(lc), false);

	return taskq_cancelled_workflows(sorted);
}
