/*-------------------------------------------------------------------------
 *
 * insert.c
 *	  A batch of tasks inserted atomically, with their edges to each other
 *	  and to stored tasks that have not started (insert_tasks,
 *	  replace_tasks, insert_tasks_if_absent, the shapes).
 *
 * A batch is checked whole before anything is written: duplicate ids in the
 * batch, unknown successors, cycles among the batch's own edges.  The rows
 * are then written by insert_rows.c (stored duplicates reported by id, not
 * as a constraint name).  Edges to stored tasks then add to those tasks' num_signals, taking
 * their row locks in id order.  Spontaneous tasks with nothing to wait for
 * complete at once.
 *
 * A plain insert cannot close a cycle through stored tasks: no stored task
 * has an edge into a task that did not exist yet.  replace_tasks can, since
 * a replacing task keeps the edges into the id it replaces (predecessors
 * still name it), so it takes the dependency-graph lock first and checks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "common/args.h"
#include "common/plan.h"
#include "ipc/metrics.h"
#include "ipc/wakeup.h"
#include "queue/queue_internal.h"

/* insert_tasks_if_absent: which ids are stored already (kept from deletion). */
static TaskqPlan existing_plan = {
	"SELECT id FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) ANY ($1)"
	" ORDER BY id FOR KEY SHARE",
	1, {TEXTARRAYOID}
};

static TaskqPlan state_plan = {
	"SELECT status_code::text, num_signals FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/* The stored tasks a replace batch names, locked in id order. */
static TaskqPlan lock_replaced_plan = {
	"SELECT id, status_code::text, num_signals, " TASKQ_SQL_OWNED
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) ANY ($1)"
	" ORDER BY id FOR UPDATE",
	1, {TEXTARRAYOID}
};

/*
 * A replaced task's live incoming edges, once the batch's aborts are done:
 * its unfinished predecessors (num_signals, unless its rule released it).
 */
static TaskqPlan live_signals_plan = {
	"SELECT CASE WHEN \"trigger\" OPERATOR(pg_catalog.>=) 'one_failed'::taskq.trigger_rule"
	"            THEN total_dependencies OPERATOR(pg_catalog.-) num_completed"
	"                 OPERATOR(pg_catalog.-) num_failed"
	"            ELSE num_signals END"
	"  FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/*
 * Legacy statement, the same for an extension not updated to 0.5 yet
 * (queue.h: taskq_schema_at_least_0_5).  It goes when updates from 0.4 are
 * no longer supported.
 */
static TaskqPlan legacy_live_signals_plan = {
	"SELECT num_signals FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static TaskqPlan delete_plan = {
	"DELETE FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

typedef struct IdEntry
{
	char		id[TASKQ_MAX_ID_LEN + 1];	/* hash key */
	TaskqTaskSpec *spec;			/* the batch task with this id, or NULL */
	int32		stored_edges;	/* edges from the batch into a stored task */
	int32		inherited;		/* replace: live edges into the old task */
	int			indegree;		/* cycle check (Kahn) */
} IdEntry;

static HTAB *
make_id_table(int size)
{
	HASHCTL		ctl;

	ctl.keysize = TASKQ_MAX_ID_LEN + 1;
	ctl.entrysize = sizeof(IdEntry);
	ctl.hcxt = CurrentMemoryContext;
	return hash_create("taskq batch ids", Max(size, 16), &ctl,
					   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

static IdEntry *
lookup_id(HTAB *ids, const char *id, bool create)
{
	bool		found;
	IdEntry    *e = hash_search(ids, id, create ? HASH_ENTER : HASH_FIND, &found);

	if (create && !found)
	{
		e->spec = NULL;
		e->stored_edges = 0;
		e->inherited = 0;
		e->indegree = 0;
	}
	return e;
}

/*
 * Does the batch need its id table?  Not if it has no edges, nothing
 * replaced, and no id that can repeat another: one task, or ids all made
 * by taskq.  (enqueue and enqueue_many: a one-task call, or a batch of
 * 1,000, spent more on the table than on checking the rows.)
 */
static bool
needs_id_table(List *specs, bool replace)
{
	ListCell   *lc;
	bool		made = true;

	if (replace)
		return true;
	foreach(lc, specs)
	{
		TaskqTaskSpec *spec = lfirst(lc);

		if (spec->successors != NIL)
			return true;
		made &= spec->made_id;
	}
	return !made && list_length(specs) > 1;
}

/*
 * Index the batch by id, refuse duplicates, count incoming edges, and
 * refuse cycles among the batch's own edges.  NULL if the batch needs no
 * table (needs_id_table): every entry would say no edges, nothing
 * inherited.
 */
static HTAB *
index_batch(List *specs, bool replace)
{
	HTAB	   *ids;
	ListCell   *lc;
	List	   *queue = NIL;
	int			visited = 0;

	if (!needs_id_table(specs, replace))
		return NULL;
	ids = make_id_table(list_length(specs) * 2);
	foreach(lc, specs)
	{
		TaskqTaskSpec *spec = lfirst(lc);
		IdEntry    *e = lookup_id(ids, spec->id, true);

		if (e->spec != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("task \"%s\" appears more than once in argument \"%s\"",
							spec->id, spec->argname ? spec->argname : "tasks"),
					 errdetail("Tasks %d and %d have the same id.",
							   e->spec->index, spec->index)));
		e->spec = spec;
	}

	foreach(lc, specs)
	{
		TaskqTaskSpec *spec = lfirst(lc);
		ListCell   *sc;

		foreach(sc, spec->successors)
		{
			IdEntry    *e = lookup_id(ids, lfirst(sc), true);

			if (e->spec)
			{
				e->spec->num_signals++;
				e->indegree++;
			}
			else
				e->stored_edges++;
		}
	}

	/* Kahn's algorithm over batch-internal edges. */
	foreach(lc, specs)
	{
		TaskqTaskSpec *spec = lfirst(lc);

		if (lookup_id(ids, spec->id, false)->indegree == 0)
			queue = lappend(queue, spec);
	}
	while (queue != NIL)
	{
		TaskqTaskSpec *spec = linitial(queue);
		ListCell   *sc;

		queue = list_delete_first(queue);
		visited++;
		foreach(sc, spec->successors)
		{
			IdEntry    *e = lookup_id(ids, lfirst(sc), false);

			if (e->spec && --e->indegree == 0)
				queue = lappend(queue, e->spec);
		}
	}
	if (visited < list_length(specs))
	{
		foreach(lc, specs)
		{
			TaskqTaskSpec *spec = lfirst(lc);

			if (lookup_id(ids, spec->id, false)->indegree > 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("dependency cycle through task \"%s\" in argument \"tasks\"",
								spec->id),
						 errdetail("Following to_signal_after from task \"%s\" leads back to it.",
								   spec->id)));
		}
	}
	return ids;
}

/* Name the first batch task whose to_signal_after names id. */
static TaskqTaskSpec *
first_predecessor(List *specs, const char *id)
{
	ListCell   *lc;

	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);
		ListCell   *sc;

		foreach(sc, s->successors)
			if (strcmp(lfirst(sc), id) == 0)
				return s;
	}
	return NULL;
}

/*
 * Add the batch's edges into stored tasks, locking those in id order.  Each
 * must exist and not have started.
 */
static void
signal_stored_successors(List *specs, HTAB *ids)
{
	HASH_SEQ_STATUS seq;
	IdEntry    *e;
	List	   *stored = NIL;
	ListCell   *lc;

	if (ids == NULL)
		return;					/* no edges */
	hash_seq_init(&seq, ids);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->spec == NULL && e->stored_edges > 0)
			stored = lappend(stored, e);
	if (stored == NIL)
		return;
	list_sort(stored, taskq_compare_strings_lc);	/* id is the first field */

	foreach(lc, stored)
	{
		Datum		values[2];
		char	   *code;

		e = lfirst(lc);
		values[0] = CStringGetTextDatum(e->id);
		if (taskq_signal_add_edges(e->id, e->stored_edges, true))
			continue;

		taskq_execute(&state_plan, values, NULL, false, 0);
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					 errmsg("task \"%s\" named in to_signal_after of task \"%s\" does not exist",
							e->id, first_predecessor(specs, e->id)->id)));
		code = taskq_get_text(0, 1, NULL);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" named in to_signal_after of task \"%s\" has already %s",
						e->id, first_predecessor(specs, e->id)->id,
						strcmp(code, "pending") == 0 || strcmp(code, "in_progress") == 0 ?
						"started" : "finished"),
				 errdetail("A new dependency can only be added to a task that has not started.")));
	}
}

/* The rows of the batch (insert_rows.c), with the edges each inherits. */
static void
insert_rows(List *specs, HTAB *ids, bool if_absent)
{
	int32	   *inherited = palloc(sizeof(int32) * list_length(specs));
	ListCell   *lc;
	int			i = 0;

	foreach(lc, specs)
		inherited[i++] = ids == NULL ? 0 :
			lookup_id(ids, ((TaskqTaskSpec *) lfirst(lc))->id, false)->inherited;
	taskq_insert_rows(specs, inherited, if_absent);
}

/*
 * Complete the batch's spontaneous tasks that have nothing to wait for.
 * The row says: an earlier one may have completed it through a signal, or
 * dependencies added with the batch may hold it.
 */
static void
complete_spontaneous(List *specs)
{
	ListCell   *lc;

	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);
		Datum		arg;

		if (!s->spontaneous)
			continue;
		arg = CStringGetTextDatum(s->id);
		taskq_execute(&state_plan, &arg, NULL, false, 0);
		if (strcmp(taskq_get_text(0, 1, NULL), "pending") == 0 &&
			taskq_get_int32(0, 2, NULL) == 0)
			taskq_complete_task(s->id, NULL);
	}
}

/*
 * Note the actions that got ready work, for the wakeups sent at commit, and
 * the earliest moment delayed work becomes ready.
 */
static void
note_ready(List *specs, HTAB *ids)
{
	ListCell   *lc;
	const char *last = NULL;
	int			run = 0;		/* ready tasks of action last, noted at its end */

	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);

		if (s->spontaneous || s->num_signals != 0 ||
			(ids != NULL && lookup_id(ids, s->id, false)->inherited != 0))
			continue;
		if (s->has_not_before && s->not_before > GetCurrentTransactionStartTimestamp())
			taskq_note_due(s->not_before);	/* the worker wakes for it */
		else if (last != NULL && strcmp(last, s->action) == 0)
			run++;
		else
		{
			if (last != NULL)
				taskq_note_ready_tasks(last, run);
			last = s->action;
			run = 1;
		}
	}
	if (last != NULL)
		taskq_note_ready_tasks(last, run);
}

/* Count the batch's tasks per action (runs of one action, as batches come). */
static void
count_inserted(List *specs)
{
	ListCell   *lc;
	const char *last = NULL;
	int			run = 0;

	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);

		if (last != NULL && strcmp(last, s->action) == 0)
			run++;
		else
		{
			if (last != NULL)
				taskq_metric_count(last, -1, TASKQ_M_INSERTED, run);
			last = s->action;
			run = 1;
		}
	}
	if (last != NULL)
		taskq_metric_count(last, -1, TASKQ_M_INSERTED, run);
}

/*
 * Replace: lock the stored tasks with batch ids, refuse if one is owned,
 * abort (with the cascade) those unfinished, remember their live incoming
 * edges, and delete them.  Returns true if some replaced task keeps edges
 * from stored predecessors.
 */
static bool
remove_replaced(List *specs, HTAB *ids)
{
	List	   *idlist = NIL;
	ListCell   *lc;
	int			n;
	char	  **rid;
	char	  **rcode;
	bool		inherits = false;

	foreach(lc, specs)
		idlist = lappend(idlist, ((TaskqTaskSpec *) lfirst(lc))->id);
	{
		Datum		arg = taskq_text_array_datum(idlist);

		taskq_execute(&lock_replaced_plan, &arg, NULL, false, 0);
	}
	n = SPI_processed;
	rid = palloc(sizeof(char *) * Max(n, 1));
	rcode = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		rid[i] = taskq_get_text(i, 1, NULL);
		rcode[i] = taskq_get_text(i, 2, NULL);
		if (taskq_get_bool(i, 4, NULL))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("task \"%s\" is in progress and cannot be replaced", rid[i]),
					 errdetail("A task can be replaced while nobody owns it: pending, finished, or with an expired lease.")));
	}

	for (int i = 0; i < n; i++)
	{
		Datum		arg = CStringGetTextDatum(rid[i]);

		/* An earlier abort in this loop may have cascaded to it. */
		taskq_execute(&state_plan, &arg, NULL, false, 0);
		rcode[i] = taskq_get_text(0, 1, NULL);
		if (strcmp(rcode[i], "pending") == 0 || strcmp(rcode[i], "in_progress") == 0)
			taskq_abort_task(rid[i], "aborted: replaced");
	}
	/*
	 * Read the live incoming edges only now: aborting one replaced task
	 * signals another that it named, and the aborted predecessor is deleted
	 * with the rest, so that edge is not inherited.
	 */
	for (int i = 0; i < n; i++)
	{
		Datum		arg = CStringGetTextDatum(rid[i]);
		IdEntry    *e = lookup_id(ids, rid[i], false);

		taskq_execute(taskq_schema_at_least_0_5() ? &live_signals_plan : &legacy_live_signals_plan,
					  &arg, NULL, false, 0);
		e->inherited = taskq_get_int32(0, 1, NULL);
		if (e->inherited > 0)
			inherits = true;
	}
	for (int i = 0; i < n; i++)
	{
		Datum		arg = CStringGetTextDatum(rid[i]);

		taskq_execute(&delete_plan, &arg, NULL, false, 0);
	}
	return inherits;
}

/* Does the batch name stored tasks in to_signal_after? */
static bool
has_stored_successors(HTAB *ids)
{
	HASH_SEQ_STATUS seq;
	IdEntry    *e;

	if (ids == NULL)
		return false;
	hash_seq_init(&seq, ids);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->spec == NULL && e->stored_edges > 0)
		{
			hash_seq_term(&seq);
			return true;
		}
	return false;
}

typedef TaskqInsertMode InsertMode;

/*
 * Take the workflow locks of the batch (shared, in name order, before any
 * row lock) and return the batch's workflows that were cancelled.  Under
 * these locks cancel_workflow, which takes them exclusively, either sees
 * the tasks we insert or we see its cancellation: a task of a cancelled
 * workflow never runs, however the two race.
 */
static List *
lock_workflows(List *specs)
{
	List	   *names = NIL;
	ListCell   *lc;

	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);

		if (s->workflow)
			names = lappend(names, s->workflow);
	}
	return taskq_lock_workflows(names);
}

/* Abort at once the batch's tasks whose workflow was cancelled. */
static void
abort_cancelled(List *specs, List *cancelled)
{
	ListCell   *lc;

	if (cancelled == NIL)
		return;
	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);
		Datum		arg;

		if (s->workflow == NULL || !taskq_string_member(cancelled, s->workflow))
			continue;
		arg = CStringGetTextDatum(s->id);
		taskq_execute(&state_plan, &arg, NULL, false, 0);
		if (strcmp(taskq_get_text(0, 1, NULL), "pending") == 0)
			taskq_abort_task(s->id, psprintf("cancelled: workflow \"%s\" was cancelled",
											 s->workflow));
	}
}

/*
 * Insert (or replace) the batch; then make each of waiting wait for each of
 * afters (stored tasks), before spontaneous tasks are completed.  SPI is
 * connected by the caller.
 */
static void
insert_batch(List *specs, HTAB *ids, InsertMode mode, List *afters,
			 List *waiting)
{
	List	   *cancelled = lock_workflows(specs);

	/*
	 * Every change to edges between stored tasks takes the graph lock before
	 * any row lock, so that they all lock in one order: replace (inherited
	 * edges), edges into stored tasks, waits added for the shapes.
	 */
	if (mode == TASKQ_INSERT_REPLACE || afters != NIL || has_stored_successors(ids))
		taskq_lock_dependency_graph();
	if (mode == TASKQ_INSERT_REPLACE && remove_replaced(specs, ids))
	{
		ListCell   *lc;

		insert_rows(specs, ids, false);
		signal_stored_successors(specs, ids);
		foreach(lc, specs)
		{
			TaskqTaskSpec *s = lfirst(lc);

			if (lookup_id(ids, s->id, false)->inherited > 0)
				taskq_check_no_cycle_through(s->id);
		}
	}
	else
	{
		insert_rows(specs, ids, mode == TASKQ_INSERT_IF_ABSENT);
		signal_stored_successors(specs, ids);
	}
	if (afters != NIL && waiting != NIL)
	{
		List	   *pair_afters = NIL;
		List	   *pair_runs = NIL;
		ListCell   *la,
				   *lw;

		foreach(lw, waiting)
			foreach(la, afters)
			{
				pair_afters = lappend(pair_afters, lfirst(la));
				pair_runs = lappend(pair_runs, lfirst(lw));
			}
		(void) taskq_add_dependency_pairs(pair_afters, pair_runs);
	}
	abort_cancelled(specs, cancelled);
	complete_spontaneous(specs);
	note_ready(specs, ids);
	count_inserted(specs);
}

/*
 * Insert a batch of tasks (queue.h).  The batch is checked whole first:
 * duplicate ids, unknown successors, cycles among its own edges.
 */
int64
taskq_insert(List *specs, TaskqInsertMode mode, List *afters, List *waiting,
			 bool *inserted)
{
	HTAB	   *ids;
	HTAB	   *existing;
	List	   *fresh = NIL;
	List	   *idlist = NIL;
	ListCell   *lc;
	Datum		arg;
	int			i;

	if (specs == NIL)
		return 0;
	ids = index_batch(specs, mode == TASKQ_INSERT_REPLACE);	/* duplicates and cycles */
	if (mode != TASKQ_INSERT_IF_ABSENT)
	{
		insert_batch(specs, ids, mode, afters, waiting);
		taskq_finished_dispatch();	/* spontaneous tasks, replaced ones */
		return list_length(specs);
	}

	/* the tasks whose id is stored already are left as they are */
	foreach(lc, specs)
		idlist = lappend(idlist, ((TaskqTaskSpec *) lfirst(lc))->id);
	arg = taskq_text_array_datum(idlist);
	taskq_execute(&existing_plan, &arg, NULL, false, 0);
	existing = make_id_table(SPI_processed);
	for (uint64 r = 0; r < SPI_processed; r++)
		lookup_id(existing, taskq_get_text(r, 1, NULL), true);
	i = 0;
	foreach(lc, specs)
	{
		TaskqTaskSpec *s = lfirst(lc);

		inserted[i++] = lookup_id(existing, s->id, false) == NULL;
		if (inserted[i - 1])
		{
			s->num_signals = 0; /* counted again without the skipped ones */
			fresh = lappend(fresh, s);
		}
	}
	if (fresh != NIL)
		insert_batch(fresh, index_batch(fresh, false), TASKQ_INSERT_IF_ABSENT, afters, waiting);
	taskq_finished_dispatch();
	return list_length(fresh);
}
