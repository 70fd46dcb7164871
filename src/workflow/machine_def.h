/*-------------------------------------------------------------------------
 *
 * machine_def.h
 *	  A state machine's definition in C (machine_def.c): parsed from its
 *	  JSON, checked whole when it is stored.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_MACHINE_DEF_H
#define TASKQ_MACHINE_DEF_H

#include "datatype/timestamp.h"
#include "utils/jsonb.h"

typedef struct TaskqMachineTransition
{
	char	   *event;
	char	   *to;
	int			to_index;
	Interval   *after;			/* the next state's task delayed so long, or NULL */
} TaskqMachineTransition;

typedef struct TaskqMachineState
{
	char	   *name;
	char	   *action;			/* NULL: a waiting state (or a child or map state) */
	char	   *child_kind;		/* a child state: "machine" or "saga", else NULL */
	char	   *child_name;		/* a child state: the definition it starts */
	bool		initial;
	bool		final;
	bool		continuation;
	double		fan_in;			/* seconds; 0: not a fan-in state */
	bool		has_max_tries;
	int32		max_tries;
	Jsonb	   *retry;			/* NULL: the machine's */
	int32		priority;
	int			ntransitions;
	TaskqMachineTransition *transitions;
	Interval   *timeout;		/* waiting state: on_timeout after so long, or NULL */
	char	   *on_timeout;
	/* a map state (machine_map.c): map_action not NULL */
	char	   *map_items;		/* the context key of the array */
	char	   *map_action;		/* the action of its items */
	int32		map_max_parallel;	/* 0: no limit */
} TaskqMachineState;

/* The events a map state moves with. */
#define TASKQ_MAP_MAPPED "mapped"
#define TASKQ_MAP_FAILED "map_failed"


typedef struct TaskqMachineDef
{
	int			nstates;
	TaskqMachineState *states;
	int			initial;
	bool		has_max_tries;
	int32		max_tries;
	Jsonb	   *retry;
} TaskqMachineDef;

extern TaskqMachineDef *taskq_machine_parse(Jsonb *def, bool check);
extern int	taskq_machine_state_index(TaskqMachineDef *m, const char *name);
extern TaskqMachineTransition *taskq_machine_find_transition(TaskqMachineState *s, const char *event);
/*
 * machine_timers.c: the keys "after", "timeout" and "on_timeout" parsed and
 * checked.  taskq_machine_no_after_into: 22023 if a transition with "after"
 * goes into state si, which has no task of its own (what: "waiting state",
 * "fan-in state", ...): for every kind of state without a task of its own.
 */
extern Interval *taskq_def_opt_interval(JsonbContainer *obj, const char *key,
										const char *where, bool check);
extern void taskq_machine_parse_timeout(JsonbContainer *obj, TaskqMachineState *s, bool check);
extern void taskq_machine_check_timers(TaskqMachineDef *m);
extern void taskq_machine_no_after_into(TaskqMachineDef *m, int si, const char *what);
/* machine_events.c: events kept for a run until a waiting state takes them */
struct TaskqRun;
extern bool taskq_machine_waiting_event(TaskqMachineDef *m, const char *event);
extern void taskq_machine_keep_event(struct TaskqRun *run, const char *event, Jsonb *context);
extern bool taskq_machine_take_kept_event(struct TaskqRun *run, TaskqMachineState *s,
										  char **event, Jsonb **context);

#endif							/* TASKQ_MACHINE_DEF_H */
