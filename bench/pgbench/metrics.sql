SELECT * FROM taskq.metrics();
