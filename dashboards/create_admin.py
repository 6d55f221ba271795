"""Create (or reset the password of) Superset's admin user, the password read from stdin.

`superset fab create-admin --password X` puts the password on a command line, where `ps`
shows it to every user of the machine; a pipe does not.
Usage: printf %s "$PASSWORD" | python dashboards/create_admin.py USERNAME
"""

from __future__ import annotations

import sys


def main(username: str) -> int:
    password = sys.stdin.read().strip("\n")
    if not password:
        print("create_admin: empty password on stdin", file=sys.stderr)
        return 2
    from superset.app import create_app

    app = create_app()
    with app.app_context():
        sm = app.appbuilder.sm
        user = sm.find_user(username=username)
        if user is None:
            role = sm.find_role(sm.auth_role_admin)
            added = sm.add_user(
                username, "mtabench", "admin", f"{username}@localhost", role, password=password
            )
            if not added:
                print(f"create_admin: could not add {username}", file=sys.stderr)
                return 1
            print(f"create_admin: admin user {username} created")
        else:
            sm.reset_password(user.id, password)
            print(f"create_admin: password of {username} set")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "admin"))
