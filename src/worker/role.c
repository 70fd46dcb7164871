/*-------------------------------------------------------------------------
 *
 * role.c
 *	  The role the background workers run as (taskq.worker_role): looked up by
 *	  the launcher, which starts no worker while it is unusable.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
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

#include "common/pg_compat.h"
#include "common/settings.h"
#include "worker/worker.h"

/*
 * Resolve taskq.worker_role (in a transaction).  True with *roleid set
 * (InvalidOid: not set, the bootstrap superuser), or false, after a
 * warning the first time, when the role does not exist or may not log in:
 * then no worker is started.
 */
bool
taskq_worker_role_lookup(Oid *roleid)
{
	static int	warned = 0;		/* 1: missing, 2: no LOGIN */
	HeapTuple	tup;
	Form_pg_authid form;

	*roleid = InvalidOid;
	if (taskq_worker_role == NULL || taskq_worker_role[0] == '\0')
		return true;

	tup = SearchSysCache1(AUTHNAME, CStringGetDatum(taskq_worker_role));
	if (!HeapTupleIsValid(tup))
	{
		if (warned != 1)
			ereport(WARNING,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("role \"%s\" named by taskq.worker_role does not exist",
							taskq_worker_role),
					 errdetail("No taskq worker is started until it does.")));
		warned = 1;
		return false;
	}
	form = (Form_pg_authid) GETSTRUCT(tup);
	if (!form->rolcanlogin)
	{
		if (warned != 2)
			ereport(WARNING,
					(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
					 errmsg("role \"%s\" named by taskq.worker_role is not permitted to log in",
							taskq_worker_role),
					 errdetail("PostgreSQL starts background workers only as roles with LOGIN; no taskq worker is started."),
					 errhint("Give it LOGIN with ALTER ROLE %s LOGIN.", quote_identifier(taskq_worker_role))));
		warned = 2;
		ReleaseSysCache(tup);
		return false;
	}
	*roleid = form->oid;
	ReleaseSysCache(tup);
	warned = 0;
	return true;
}

/* May the workers' role connect to this database (in a transaction)? */
bool
taskq_worker_role_may_connect(Oid roleid, Oid dboid)
{
	return !OidIsValid(roleid) ||
		taskq_database_aclcheck(dboid, roleid, ACL_CONNECT) == ACLCHECK_OK;
}
