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
	char	   *action;			/* NULL: a waiting state */
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
} TaskqMachineState;

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
