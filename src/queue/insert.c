/*-------------------------------------------------------------------------
 *
 * insert.c
 *	  A batch of tasks inserted atomically, with their edges to each other
 *	  and to stored tasks that have not started (insert_tasks,
 *	  replace_tasks, insert_tasks_if_absent, the shapes).
 *
 * A batch is checked whole before anything is written: duplicate ids in the
 * batch, unknown successors, cycles among the batch's own edges.  Rows go in
 * with one INSERT over unnest() of column arrays, after a look for stored
 * duplicates (so that one is reported by id instead of as a constraint
 * name).  Edges to stored tasks then add to those tasks' num_signals, taking
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
#include "ipc/wakeup.h"
#include "queue/relation.h"

/*
 * The rows, one per element of the column arrays.  The arrays are unnested
 * in the select list, not in FROM: ROWS FROM (unnest(..), ...) would first
 * copy every column of every row into a tuplestore, which cost more than
 * the insert itself.  Two forms (see insert_rows): for a large batch, the
 * tries of actions with a policy filled in beforehand and the rows written
 * a page at a time by row_insert.c (a plain INSERT if that path does not
 * apply); for a small one (or insert_tasks_if_absent), one statement that
 * looks the policy up and reports stored duplicates by a short count.
 */
#define INSERT_SQL(max_tries, conflict) \
	"INSERT INTO taskq.tasks AS t (id, action, body, status, max_tries," \
	"       num_signals, total_dependencies, to_signal_after, post_result," \
	"       priority, not_before, spontaneous, retry, workflow)" \
	" SELECT u.id, u.action, u.body, u.status, " max_tries "," \
	"        u.num_signals, u.num_signals, u.succ::text[], u.post_result, u.priority," \
	"        COALESCE(u.not_before, pg_catalog.now()), u.spontaneous, u.retry, u.workflow" \
	"   FROM (SELECT pg_catalog.unnest($1::text[]) AS id," \
	"                pg_catalog.unnest($2::text[]) AS action," \
	"                pg_catalog.unnest($3::jsonb[]) AS body," \
	"                pg_catalog.unnest($4::text[]) AS status," \
	"                pg_catalog.unnest($5::integer[]) AS max_tries," \
	"                pg_catalog.unnest($6::integer[]) AS num_signals," \
	"                pg_catalog.unnest($7::text[]) AS succ," \
	"                pg_catalog.unnest($8::boolean[]) AS post_result," \
	"                pg_catalog.unnest($9::integer[]) AS priority," \
	"                pg_catalog.unnest($10::timestamptz[]) AS not_before," \
	"                pg_catalog.unnest($11::boolean[]) AS spontaneous," \
	"                pg_catalog.unnest($12::jsonb[]) AS retry," \
	"                pg_catalog.unnest($13::text[]) AS workflow) AS u" \
	conflict

#define INSERT_ARGTYPES \
	{TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, TEXTARRAYOID, \
	 INT4ARRAYOID, INT4ARRAYOID, TEXTARRAYOID, BOOLARRAYOID, \
	 INT4ARRAYOID, TIMESTAMPTZARRAYOID, BOOLARRAYOID, JSONBARRAYOID, \
	 TEXTARRAYOID}

/* Batches up to this size take the one-statement form. */
#define SMALL_BATCH 16

static TaskqPlan insert_plan = {INSERT_SQL("u.max_tries", ""), 13, INSERT_ARGTYPES, NULL, true};

static TaskqPlan insert_small_plan = {
	INSERT_SQL("COALESCE(u.max_tries, (SELECT p.max_tries FROM taskq.action_policies AS p"
			   " WHERE p.action OPERATOR(pg_catalog.=) u.action))",
			   " ON CONFLICT (id) DO NOTHING RETURNING t.id"),
	13, INSERT_ARGTYPES, NULL, true
};

/* Which of these ids are stored (see stored_among). */
static TaskqPlan stored_ids_plan = {
	"SELECT id FROM taskq.tasks WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
	1, {TEXTARRAYOID}
};

/* The default max_tries of these actions (taskq.set_action_policy). */
static TaskqPlan policy_tries_plan = {
	"SELECT action, max_tries FROM taskq.action_policies"
	" WHERE action OPERATOR(pg_catalog.=) ANY ($1) AND max_tries IS NOT NULL",
	1, {TEXTARRAYOID}, NULL, true
};

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

/* A replaced task's live incoming edges, once the batch's aborts are done. */
static TaskqPlan live_signals_plan = {
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
	TaskSpec   *spec;			/* the batch task with this id, or NULL */
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
 * Index the batch by id, refuse duplicates, count incoming edges, and
 * refuse cycles among the batch's own edges.
 */
static HTAB *
index_batch(List *specs)
{
	HTAB	   *ids = make_id_table(list_length(specs) * 2);
	ListCell   *lc;
	List	   *queue = NIL;
	int			visited = 0;

	foreach(lc, specs)
	{
		TaskSpec   *spec = lfirst(lc);
		IdEntry    *e = lookup_id(ids, spec->id, true);

		if (e->spec != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("task \"%s\" appears more than once in argument \"tasks\"",
							spec->id),
					 errdetail("Tasks %d and %d have the same id.",
							   e->spec->index, spec->index)));
		e->spec = spec;
	}

	foreach(lc, specs)
	{
		TaskSpec   *spec = lfirst(lc);
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
		TaskSpec   *spec = lfirst(lc);

		if (lookup_id(ids, spec->id, false)->indegree == 0)
			queue = lappend(queue, spec);
	}
	while (queue != NIL)
	{
		TaskSpec   *spec = linitial(queue);
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
			TaskSpec   *spec = lfirst(lc);

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

/* A text[] literal, every element quoted: {"a","b\\"c"}. */
static char *
array_literal(List *strings)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	foreach(lc, strings)
	{
		if (lc != list_head(strings))
			appendStringInfoChar(&buf, ',');
		appendStringInfoChar(&buf, '"');
		for (const char *p = lfirst(lc); *p; p++)
		{
			if (*p == '"' || *p == '\\')
				appendStringInfoChar(&buf, '\\');
			appendStringInfoChar(&buf, *p);
		}
		appendStringInfoChar(&buf, '"');
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/* Fail on the first task of the batch whose id is among the stored ones. */
static void
report_stored_duplicate(List *specs, List *stored)
{
	ListCell   *lc;

	foreach(lc, specs)
	{
		TaskSpec   *s = lfirst(lc);

		if (taskq_string_member(stored, s->id))
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("task \"%s\" already exists", s->id),
					 errdetail("Task %d of argument \"tasks\" has the id of a stored task.",
							   s->index),
					 errhint("Use taskq.replace_tasks to replace a task that is not in progress.")));
	}
}

/* Which ids of this text[] are stored. */
static List *
stored_among(Datum ids)
{
	List	   *stored = NIL;

	taskq_execute(&stored_ids_plan, &ids, NULL, false, 0);
	for (uint64 r = 0; r < SPI_processed; r++)
		stored = lappend(stored, taskq_get_text(r, 1, NULL));
	return stored;
}

/*
 * The INSERT wrote fewer rows than asked, and not because of a stored
 * duplicate: only a BEFORE INSERT trigger that an admin put on taskq.tasks,
 * returning NULL, does that.
 */
static void
report_skipped_rows(int n, uint64 written)
{
	ereport(ERROR,
			(errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
			 errmsg("could not insert %d of %d tasks", n - (int) written, n),
			 errdetail("A trigger on taskq.tasks skipped them.")));
}

/* The INSERT's parameters: one array per column, in INSERT_SQL's order. */
#define NCOLS 13
#define COL_ID 0
#define COL_SUCC 6
static const Oid col_types[NCOLS] = {TEXTOID, TEXTOID, JSONBOID, TEXTOID, INT4OID,
	INT4OID, TEXTOID, BOOLOID, INT4OID, TIMESTAMPTZOID, BOOLOID, JSONBOID, TEXTOID};
static const int16 col_lens[NCOLS] = {-1, -1, -1, -1, 4, 4, -1, 1, 4, 8, 1, -1, -1};
static const bool col_byval[NCOLS] = {false, false, false, false, true, true, false,
	true, true, FLOAT8PASSBYVAL, true, false, false};
static const char col_align[NCOLS] = {TYPALIGN_INT, TYPALIGN_INT, TYPALIGN_INT,
	TYPALIGN_INT, TYPALIGN_INT, TYPALIGN_INT, TYPALIGN_INT, TYPALIGN_CHAR,
	TYPALIGN_INT, TYPALIGN_DOUBLE, TYPALIGN_CHAR, TYPALIGN_INT, TYPALIGN_INT};

/* Column c of the n rows as an array, a parameter of the INSERT. */
static Datum
column_array(int c, Datum *col, bool *nulls, int n)
{
	int			dims[1] = {n};
	int			lbs[1] = {1};

	return PointerGetDatum(construct_md_array(col, nulls, 1, dims, lbs, col_types[c],
											  col_lens[c], col_byval[c], col_align[c]));
}

/* The batch as column arrays: cols[c][i] and nulls[c][i] are row i's column c. */
typedef struct BatchColumns
{
	int			n;
	Datum	   *cols[NCOLS];
	bool	   *nulls[NCOLS];
} BatchColumns;

/*
 * In a large batch a task without max_tries gets its action's, if the
 * action has a policy, looked up here once per batch, not once per row (the
 * small form looks it up in the INSERT).  Returns the actions with a policy,
 * and their tries in *tries.
 */
static List *
policy_max_tries(List *specs, List **tries)
{
	List	   *no_tries = NIL;
	List	   *actions = NIL;
	ListCell   *lc;
	Datum		arg;

	*tries = NIL;
	foreach(lc, specs)
	{
		TaskSpec   *s = lfirst(lc);

		if (!s->has_max_tries && !taskq_string_member(no_tries, s->action))
			no_tries = lappend(no_tries, s->action);
	}
	if (no_tries == NIL)
		return NIL;
	arg = taskq_text_array_datum(no_tries);
	taskq_execute(&policy_tries_plan, &arg, NULL, false, 0);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		actions = lappend(actions, taskq_get_text(r, 1, NULL));
		*tries = lappend_int(*tries, taskq_get_int32(r, 2, NULL));
	}
	return actions;
}

/*
 * The batch's rows as column arrays.  The successors of a row are a text[]
 * for the direct path, an array literal (one text, cast in the statement)
 * for the small INSERT.
 */
static void
fill_columns(BatchColumns *bc, List *specs, HTAB *ids, bool small,
			 List *policy_actions, List *policy_tries)
{
	ListCell   *lc;
	int			i = 0;

	bc->n = list_length(specs);
	for (int c = 0; c < NCOLS; c++)
	{
		bc->cols[c] = palloc0(sizeof(Datum) * bc->n);
		bc->nulls[c] = palloc0(sizeof(bool) * bc->n);
	}
	foreach(lc, specs)
	{
		TaskSpec   *s = lfirst(lc);
		IdEntry    *e = lookup_id(ids, s->id, false);
		Datum	  **cols = bc->cols;
		bool	  **nulls = bc->nulls;

		cols[0][i] = CStringGetTextDatum(s->id);
		cols[1][i] = CStringGetTextDatum(s->action);
		if (s->body)
			cols[2][i] = JsonbPGetDatum(s->body);
		else
			nulls[2][i] = true;
		if (s->status)
			cols[3][i] = CStringGetTextDatum(s->status);
		else
			nulls[3][i] = true;
		nulls[4][i] = true;
		if (s->has_max_tries)
		{
			cols[4][i] = Int32GetDatum(s->max_tries);
			nulls[4][i] = false;
		}
		else
		{
			ListCell   *pa,
					   *pt;

			forboth(pa, policy_actions, pt, policy_tries)
				if (strcmp(lfirst(pa), s->action) == 0)
				{
					cols[4][i] = Int32GetDatum(lfirst_int(pt));
					nulls[4][i] = false;
					break;
				}
		}
		cols[5][i] = Int32GetDatum(s->num_signals + e->inherited);
		if (s->successors == NIL)
			nulls[COL_SUCC][i] = true;
		else if (small)
			cols[COL_SUCC][i] = CStringGetTextDatum(array_literal(s->successors));
		else
			cols[COL_SUCC][i] = taskq_text_array_datum(s->successors);
		cols[7][i] = BoolGetDatum(s->post_result);
		cols[8][i] = Int32GetDatum(s->priority);
		if (s->has_not_before)
			cols[9][i] = TimestampTzGetDatum(s->not_before);
		else
			nulls[9][i] = true;
		cols[10][i] = BoolGetDatum(s->spontaneous);
		if (s->retry)
			cols[11][i] = JsonbPGetDatum(s->retry);
		else
			nulls[11][i] = true;
		if (s->workflow)
			cols[12][i] = CStringGetTextDatum(s->workflow);
		else
			nulls[12][i] = true;
		i++;
	}
}

/* Every column as an array, the arguments of the INSERT statements. */
static void
column_arrays(BatchColumns *bc, Datum *values)
{
	for (int c = 0; c < NCOLS; c++)
		values[c] = column_array(c, bc->cols[c], bc->nulls[c], bc->n);
}

/*
 * A small batch (or insert_tasks_if_absent): one statement that looks the
 * policy up and leaves out stored duplicates, which are then reported.
 */
static void
insert_small(List *specs, BatchColumns *bc, bool if_absent)
{
	Datum		values[NCOLS];
	List	   *inserted = NIL;
	List	   *missing = NIL;
	uint64		written;
	ListCell   *lc;

	column_arrays(bc, values);
	taskq_execute(&insert_small_plan, values, NULL, false, 0);
	if (SPI_processed == (uint64) bc->n)
		return;

	/*
	 * insert_tasks_if_absent locked the stored ones and left them out: a
	 * conflict there is a concurrent insert of the same id.
	 */
	if (if_absent)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not insert tasks: another transaction inserted one of the same ids at the same time"),
				 errhint("Retry the call.")));
	/* Left out: a stored duplicate, or a row an admin's trigger skipped. */
	written = SPI_processed;
	for (uint64 r = 0; r < written; r++)
		inserted = lappend(inserted, taskq_get_text(r, 1, NULL));
	foreach(lc, specs)
	{
		TaskSpec   *s = lfirst(lc);

		if (!taskq_string_member(inserted, s->id))
			missing = lappend(missing, s->id);
	}
	report_stored_duplicate(specs, stored_among(taskq_text_array_datum(missing)));
	report_skipped_rows(bc->n, written);
}

/*
 * A large batch: written a page at a time, its primary key entries checked
 * as they go in (row_insert.c), and a stored duplicate reported by id and
 * batch position.  False if that path does not apply.
 */
static bool
insert_large_direct(List *specs, BatchColumns *bc)
{
	/* total_dependencies starts equal to num_signals (cols[5]) */
	static const char *const names[] = {"id", "action", "body", "status",
		"max_tries", "num_signals", "total_dependencies", "to_signal_after",
		"post_result", "priority", "not_before", "spontaneous", "retry",
	"workflow"};
	Datum	  **c = bc->cols;
	bool	  **z = bc->nulls;
	Datum	   *dcols[lengthof(names)] = {c[0], c[1], c[2], c[3], c[4], c[5], c[5],
	c[6], c[7], c[8], c[9], c[10], c[11], c[12]};
	bool	   *dnulls[lengthof(names)] = {z[0], z[1], z[2], z[3], z[4], z[5], z[5],
	z[6], z[7], z[8], z[9], z[10], z[11], z[12]};
	int			stored;

	if (!taskq_insert_direct(bc->n, lengthof(names), names, dcols, dnulls, &stored))
		return false;
	if (stored >= 0)
		report_stored_duplicate(specs, list_make1(((TaskSpec *) list_nth(specs, stored))->id));
	return true;
}

/*
 * A large batch with the INSERT, when the direct path does not apply: a
 * stored duplicate is looked for first, so that it is reported by id and
 * batch position.  (A plain INSERT is much cheaper than ON CONFLICT, which
 * takes a speculative-insertion lock and writes a second WAL record per
 * row.)  Only an insert of the same id racing this one between the look and
 * the insert gets the unique index's own error: the same SQLSTATE, 23505,
 * with the id in its detail.
 */
static void
insert_large_sql(List *specs, BatchColumns *bc)
{
	Datum		values[NCOLS];
	ListCell   *lc;
	int			i = 0;

	report_stored_duplicate(specs, stored_among(column_array(COL_ID, bc->cols[COL_ID],
															 bc->nulls[COL_ID], bc->n)));
	/* successors as array literals, every column as an array */
	foreach(lc, specs)
	{
		TaskSpec   *s = lfirst(lc);

		if (s->successors != NIL)
			bc->cols[COL_SUCC][i] = CStringGetTextDatum(array_literal(s->successors));
		i++;
	}
	column_arrays(bc, values);
	taskq_execute(&insert_plan, values, NULL, false, 0);
	if (SPI_processed != (uint64) bc->n)
		report_skipped_rows(bc->n, SPI_processed);
}

/*
 * Insert every row: a small batch in one statement; a large one a page at a
 * time (the direct path), or with the INSERT if that path does not apply.
 */
static void
insert_rows(List *specs, HTAB *ids, bool if_absent)
{
	BatchColumns bc;
	bool		small = if_absent || list_length(specs) <= SMALL_BATCH;
	List	   *policy_actions = NIL;
	List	   *policy_tries = NIL;

	if (!small)
		policy_actions = policy_max_tries(specs, &policy_tries);
	fill_columns(&bc, specs, ids, small, policy_actions, policy_tries);
	if (small)
		insert_small(specs, &bc, if_absent);
	else if (!insert_large_direct(specs, &bc))
		insert_large_sql(specs, &bc);
}

/* Name the first batch task whose to_signal_after names id. */
static TaskSpec *
first_predecessor(List *specs, const char *id)
{
	ListCell   *lc;

	foreach(lc, specs)
	{
		TaskSpec   *s = lfirst(lc);
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
		TaskSpec   *s = lfirst(lc);
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

/* Note the actions that got ready work, for the wakeups sent at commit. */
static void
note_ready(List *specs, HTAB *ids)
{
	ListCell   *lc;
	const char *last = NULL;

	foreach(lc, specs)
	{
		TaskSpec   *s = lfirst(lc);

		if (!s->spontaneous &&
			s->num_signals + lookup_id(ids, s->id, false)->inherited == 0 &&
			(!s->has_not_before || s->not_before <= GetCurrentTransactionStartTimestamp()) &&
			(last == NULL || strcmp(last, s->action) != 0))
		{
			taskq_note_ready(s->action);
			last = s->action;
		}
	}
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
		idlist = lappend(idlist, ((TaskSpec *) lfirst(lc))->id);
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

		taskq_execute(&live_signals_plan, &arg, NULL, false, 0);
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
		TaskSpec   *s = lfirst(lc);

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
		TaskSpec   *s = lfirst(lc);
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
			TaskSpec   *s = lfirst(lc);

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
	ids = index_batch(specs);	/* duplicates and cycles in the batch */
	if (mode != TASKQ_INSERT_IF_ABSENT)
	{
		insert_batch(specs, ids, mode, afters, waiting);
		taskq_finished_dispatch();	/* spontaneous tasks, replaced ones */
		return list_length(specs);
	}

	/* the tasks whose id is stored already are left as they are */
	foreach(lc, specs)
		idlist = lappend(idlist, ((TaskSpec *) lfirst(lc))->id);
	arg = taskq_text_array_datum(idlist);
	taskq_execute(&existing_plan, &arg, NULL, false, 0);
	existing = make_id_table(SPI_processed);
	for (uint64 r = 0; r < SPI_processed; r++)
		lookup_id(existing, taskq_get_text(r, 1, NULL), true);
	i = 0;
	foreach(lc, specs)
	{
		TaskSpec   *s = lfirst(lc);

		inserted[i++] = lookup_id(existing, s->id, false) == NULL;
		if (inserted[i - 1])
		{
			s->num_signals = 0; /* counted again without the skipped ones */
			fresh = lappend(fresh, s);
		}
	}
	if (fresh != NIL)
		insert_batch(fresh, index_batch(fresh), TASKQ_INSERT_IF_ABSENT, afters, waiting);
	taskq_finished_dispatch();
	return list_length(fresh);
}
