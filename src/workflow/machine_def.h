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

#include "utils/jsonb.h"

typedef struct TaskqMachineTransition
{
	char	   *event;
	char	   *to;
	int			to_index;
} TaskqMachineTransition;

typedef struct TaskqMachineState
{
	char	   *name;
	char	   *action;			/* NULL: a waiting state (or a map state) */
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
/* machine_events.c: events kept for a run until a waiting state takes them */
struct TaskqRun;
extern bool taskq_machine_waiting_event(TaskqMachineDef *m, const char *event);
extern void taskq_machine_keep_event(struct TaskqRun *run, const char *event, Jsonb *context);
extern bool taskq_machine_take_kept_event(struct TaskqRun *run, TaskqMachineState *s,
										  char **event, Jsonb **context);

#endif							/* TASKQ_MACHINE_DEF_H */
