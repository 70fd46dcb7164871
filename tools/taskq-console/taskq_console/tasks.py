"""The Tasks page (being built)."""

from flask import render_template

from . import db_blueprint

bp = db_blueprint("tasks", __name__)


@bp.route("/tasks")
def page():
    return render_template("placeholder.html", title="Tasks")


@bp.route("/tasks/<path:id>")
def detail(id):
    return render_template("placeholder.html", title=id)
