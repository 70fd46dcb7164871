/*-------------------------------------------------------------------------
 *
 * saga_def.h
 *	  A saga's definition in C (saga_def.c): its steps, each with a do and
 *	  an undo action, the DAG their "after" lists make, and the retry
 *	  rules of doing and undoing; parsed from its JSON, checked whole when
 *	  it is stored.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_SAGA_DEF_H
#define TASKQ_SAGA_DEF_H

#include "utils/jsonb.h"

typedef struct TaskqSagaStep
{
	char	   *name;
	char	   *do_action;		/* NULL: a child step */
	char	   *child_kind;		/* a child step: "machine" or "saga", else NULL */
	char	   *child_name;		/* a child step: the definition it starts */
	char	   *undo_action;	/* NULL: nothing to undo */
	int			nafter;
	int		   *after;			/* indexes of the steps it comes after */
	bool		one_success;	/* trigger: one_success (else all_success) */
	bool		has_max_tries;
	int32		max_tries;
	Jsonb	   *retry;
	bool		has_undo_max_tries;
	int32		undo_max_tries;
	Jsonb	   *undo_retry;
} TaskqSagaStep;

typedef struct TaskqSagaDef
{
	int			nsteps;
	TaskqSagaStep *steps;
	bool		has_max_tries;
	int32		max_tries;
	Jsonb	   *retry;
	bool		has_undo_max_tries;
	int32		undo_max_tries;
	Jsonb	   *undo_retry;
	/* reach[i * nsteps + j]: step j comes (transitively) after step i */
	bool	   *reach;
} TaskqSagaDef;

extern TaskqSagaDef *taskq_saga_parse(Jsonb *def, bool check);
extern int	taskq_saga_step_index(TaskqSagaDef *d, const char *name);

#endif							/* TASKQ_SAGA_DEF_H */
