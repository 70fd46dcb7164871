/*-------------------------------------------------------------------------
 *
 * limits.h
 *	  The documented limits on identifiers and bodies (README, Limits),
 *	  checked wherever an argument or a task object comes in.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TASKQ_LIMITS_H
#define TASKQ_LIMITS_H

/* Bytes, without the terminating NUL. */
#define TASKQ_MAX_ID_LEN		255
#define TASKQ_MAX_ACTION_LEN	255
#define TASKQ_MAX_ACTOR_LEN		255
#define TASKQ_MAX_CONCURRENCY_KEY_LEN 200	/* a task's concurrency_key */
#define TASKQ_MAX_BODY_SIZE		(1024 * 1024)
#define TASKQ_MAX_RESULT_SIZE	(1024 * 1024)	/* a return's result, jsonb form */

#endif							/* TASKQ_LIMITS_H */
