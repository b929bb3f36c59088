"""Checks that the Python firebase-admin SDK works against canopy-server serving TLS itself.

Run by run.sh with COMPAT_TLS=1, which makes a private CA and a certificate for localhost with
openssl, starts canopy-server with --tls-cert-file, --tls-key-file and --admin-secret, and sets:
  CANOPY_COMPAT_URL      https://localhost:PORT (the namespace is the server's default)
  CANOPY_COMPAT_SECRET   the admin secret, sent as firebase-admin sends its OAuth token
  REQUESTS_CA_BUNDLE     the private CA, which requests (firebase-admin's HTTP client) trusts

This is firebase-admin's production mode (no emulator variable): an https:// database URL,
requests verified against the CA, a credential of its own. firebase-admin has no onDisconnect.
"""

import os
import sys
import threading
import traceback

import firebase_admin
import google.oauth2.credentials
import requests
from firebase_admin import credentials, db, exceptions

URL = os.environ['CANOPY_COMPAT_URL']
SECRET = os.environ['CANOPY_COMPAT_SECRET']


class AdminSecret(credentials.Base):
    """The server's admin secret as firebase-admin's credential (a bearer token that never expires)."""

    def get_credential(self):
        return google.oauth2.credentials.Credentials(token=SECRET)


APP = firebase_admin.initialize_app(AdminSecret(), {'databaseURL': URL})
RESULTS = {'passed': 0, 'failed': 0}


def check(function):
    try:
        function()
        RESULTS['passed'] += 1
        print(f'PASS {function.__name__}', flush=True)
    except Exception:  # pylint: disable=broad-except
        RESULTS['failed'] += 1
        print(f'FAIL {function.__name__}', flush=True)
        traceback.print_exc()
    return function


@check
def production_mode_over_https():
    client = db.reference()._client  # pylint: disable=protected-access
    assert client.base_url == URL, f'base url {client.base_url!r}'
    assert 'ns' not in (client.params or {}), f'params {client.params!r}'


@check
def set_get_update_push_delete():
    ref = db.reference('tls/basics')
    ref.set({'a': 1, 'b': {'c': 'two'}})
    assert ref.get() == {'a': 1, 'b': {'c': 'two'}}
    ref.update({'a': 2, 'b/d': True})
    assert ref.get() == {'a': 2, 'b': {'c': 'two', 'd': True}}
    key = ref.child('list').push('pushed').key
    assert ref.child('list').child(key).get() == 'pushed'
    ref.delete()
    assert ref.get() is None


@check
def query_ordered_by_child():
    ref = db.reference('tls/scores')
    ref.set({'ada': {'score': 3}, 'bob': {'score': 1}, 'cy': {'score': 2}})
    top = ref.order_by_child('score').limit_to_last(2).get()
    assert list(top.keys()) == ['cy', 'ada'], f'got {top!r}'


@check
def transaction():
    ref = db.reference('tls/counter')
    ref.set(0)
    for _ in range(5):
        ref.transaction(lambda current: (current or 0) + 1)
    assert ref.get() == 5


@check
def listen_over_an_https_event_stream():
    ref = db.reference('tls/live')
    ref.set('first')
    seen = []
    changed = threading.Event()

    def on_event(event):
        seen.append(event.data)
        if event.data == 'second':
            changed.set()

    registration = ref.listen(on_event)
    try:
        ref.set('second')
        assert changed.wait(30), f'events seen: {seen!r}'
        assert seen[0] == 'first', f'events seen: {seen!r}'
    finally:
        registration.close()


@check
def another_credential_is_refused_and_plain_http_too():
    # firebase-admin answers a 401 by refreshing its credential, which this one cannot; so asked
    # with requests (firebase-admin's HTTP client, with the same REQUESTS_CA_BUNDLE).
    wrong = requests.get(f'{URL}/tls.json', headers={'Authorization': 'Bearer not-the-secret'}, timeout=30)
    assert wrong.status_code == 401, f'{wrong.status_code} {wrong.text}'
    plain = requests.get(URL.replace('https://', 'http://') + '/tls.json', timeout=30)
    assert plain.status_code == 400 and 'TLS' in plain.json()['error'], f'{plain.status_code} {plain.text}'


print(f"firebase-admin over TLS: {RESULTS['passed']} passed, {RESULTS['failed']} failed", flush=True)
sys.exit(1 if RESULTS['failed'] else 0)
