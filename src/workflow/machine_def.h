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

typedef struct MachineTransition
{
	char	   *event;
	char	   *to;
	int			to_index;
} MachineTransition;

typedef struct MachineState
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
	MachineTransition *transitions;
} MachineState;

typedef struct MachineDef
{
	int			nstates;
	MachineState *states;
	int			initial;
	bool		has_max_tries;
	int32		max_tries;
	Jsonb	   *retry;
} MachineDef;

extern MachineDef *taskq_machine_parse(Jsonb *def, bool check);
extern int	taskq_machine_state_index(MachineDef *m, const char *name);
extern MachineTransition *taskq_machine_find_transition(MachineState *s, const char *event);
/* machine_events.c: events kept for a run until a waiting state takes them */
struct TaskqRun;
extern bool taskq_machine_waiting_event(MachineDef *m, const char *event);
extern void taskq_machine_keep_event(struct TaskqRun *run, const char *event, Jsonb *context);
extern bool taskq_machine_take_kept_event(struct TaskqRun *run, MachineState *s,
										  char **event, Jsonb **context);

#endif							/* TASKQ_MACHINE_DEF_H */
