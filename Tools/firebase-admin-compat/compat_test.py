"""Checks that the Python firebase-admin SDK works against a Canopy server in emulator mode.

Run by run.sh, which starts the server and sets FIREBASE_DATABASE_EMULATOR_HOST=127.0.0.1:PORT.
Each check is a function; a failed assert (or any exception) counts as a failure and the run goes
on, so the closing summary line says how many checks passed and failed.
"""

import collections
import os
import sys
import threading
import time
import traceback

import firebase_admin
from firebase_admin import db, exceptions

HOST = os.environ.get('FIREBASE_DATABASE_EMULATOR_HOST')
if not HOST:
    sys.exit('FIREBASE_DATABASE_EMULATOR_HOST must be set to 127.0.0.1:PORT')

NAMESPACE = 'compat'
# With the emulator variable set, an https URL selects the namespace from its first label (the
# way emulator users configure their apps); a plain http URL with ?ns= works without it.
APP = firebase_admin.initialize_app(options={'databaseURL': f'https://{NAMESPACE}.firebaseio.com'})
HTTP_URL = f'http://{HOST}?ns={NAMESPACE}'

CHECKS = []
RESULTS = {'passed': 0, 'failed': 0}


def check(function):
    CHECKS.append(function)
    return function


def run_checks(selected):
    for function in CHECKS:
        name = function.__name__
        if selected and name not in selected:
            continue
        root = db.reference(f'/checks/{name}')
        try:
            root.delete()
            function(root)
        except Exception:  # pylint: disable=broad-except
            RESULTS['failed'] += 1
            print(f'FAIL {name}')
            traceback.print_exc(file=sys.stdout)
        else:
            RESULTS['passed'] += 1
            print(f'ok   {name}')
        sys.stdout.flush()


# --- configuration --------------------------------------------------------------------------------


@check
def emulator_client_configuration(_root):
    client = db.reference()._client  # pylint: disable=protected-access
    assert client.base_url == f'http://{HOST}', f'base url {client.base_url!r}'
    assert client.params == {'ns': NAMESPACE}, f'params {client.params!r}'
    assert client.credential.token == 'owner', 'emulator credential sends Bearer owner'


@check
def http_database_url_with_ns(root):
    root.set({'via': 'https url + emulator host'})
    same = db.reference(root.path, url=HTTP_URL)
    assert same.get() == {'via': 'https url + emulator host'}, 'http://HOST?ns= reaches the same namespace'
    other = db.reference(root.path, url=f'http://{HOST}?ns=compat-other')
    assert other.get() is None, 'another namespace is separate'
    other.set(1)
    assert root.get() == {'via': 'https url + emulator host'}, 'a write to another namespace stays there'
    other.delete()


# --- reads and writes -----------------------------------------------------------------------------


@check
def get_missing_is_none(root):
    assert root.child('nothing/here').get() is None


@check
def set_and_get_values(root):
    values = {
        'string': 'héllo wörld ✓',
        'int': 42,
        'negative': -7,
        'float': 3.25,
        'true': True,
        'false': False,
        'nested': {'a': {'b': {'c': 'deep'}}},
    }
    root.set(values)
    assert root.get() == values, f'got {root.get()!r}'
    for key, value in values.items():
        got = root.child(key).get()
        assert got == value and type(got) is type(value), f'{key}: {got!r}'
    assert isinstance(root.child('int').get(), int), 'integral numbers come back as ints'


@check
def set_list_round_trips(root):
    root.set(['a', 'b', 'c'])
    assert root.get() == ['a', 'b', 'c'], f'got {root.get()!r}'
    assert root.child('1').get() == 'b'


@check
def set_replaces(root):
    root.set({'a': 1, 'b': 2})
    root.set({'c': 3})
    assert root.get() == {'c': 3}, f'got {root.get()!r}'


@check
def update_multi_path(root):
    root.set({'a': {'x': 1, 'y': 2}, 'b': 'keep', 'c': 'drop'})
    root.update({'a/x': 10, 'a/z': {'deep': True}, 'c': None, 'd': 'new'})
    got = root.get()
    assert got == {'a': {'x': 10, 'y': 2, 'z': {'deep': True}}, 'b': 'keep', 'd': 'new'}, f'got {got!r}'


@check
def push_ids(root):
    refs = [root.push({'n': n}) for n in range(5)]
    for ref in refs:
        assert len(ref.key) == 20, f'push id {ref.key!r} is 20 characters'
        assert ref.get() is not None, 'pushed value is stored'
    keys = [ref.key for ref in refs]
    assert keys == sorted(keys), f'push ids sort in creation order: {keys}'
    assert len(set(keys)) == 5, 'push ids are unique'
    ordered = root.order_by_key().get()
    assert [value['n'] for value in ordered.values()] == [0, 1, 2, 3, 4], f'got {ordered!r}'
    default = root.push()
    assert default.get() == '', 'push() with no value stores an empty string'


@check
def delete_removes(root):
    root.set({'a': 1, 'b': 2})
    root.child('a').delete()
    assert root.get() == {'b': 2}, f'got {root.get()!r}'
    root.delete()
    assert root.get() is None
    root.child('never/was').delete()


@check
def unusual_keys_in_paths_and_values(root):
    keys = ['with space', 'a+b', 'ключ', 'emoji 😀', "quote'\"", 'amp&ersand', '-dash_', '007']
    # The SDK refuses paths with '?' (and '.', '$', '#', '[', ']') and sends '%' unescaped, so a
    # server percent-decodes 'per%20cent' to 'per cent'; such keys are valid all the same in values.
    value_only = ['q?mark', 'per%20cent']
    root.set({key: key for key in keys + value_only})
    assert root.get() == {key: key for key in keys + value_only}, f'got {root.get()!r}'
    for key in keys:
        assert root.child(key).get() == key, f'child {key!r} read back {root.child(key).get()!r}'
        root.child(key).set(f'{key}!')
        assert root.child(key).get() == f'{key}!', f'child {key!r} write went elsewhere'
    assert sorted(root.get(shallow=True)) == sorted(keys + value_only), f'shallow {root.get(shallow=True)!r}'


@check
def large_value(root):
    big = 'x' * (1 << 20)
    root.set({'big': big, 'many': {f'k{n}': n for n in range(2000)}})
    got = root.get()
    assert got['big'] == big, 'a 1 MiB string round-trips'
    assert len(got['many']) == 2000 and got['many']['k1999'] == 1999


@check
def shallow_get(root):
    root.set({'a': {'deep': {'er': 1}}, 'b': 'leaf', 'c': 5})
    got = root.get(shallow=True)
    assert got == {'a': True, 'b': True, 'c': True}, f'got {got!r}'
    assert root.child('b').get(shallow=True) == 'leaf'


# --- ETags and transactions -----------------------------------------------------------------------


@check
def etag_get(root):
    root.set({'v': 1})
    value, etag = root.get(etag=True)
    assert value == {'v': 1}, f'value {value!r}'
    assert isinstance(etag, str) and etag, f'etag {etag!r}'
    again, etag_again = root.get(etag=True)
    assert etag_again == etag, 'same value, same etag'
    root.set({'v': 2})
    _, changed = root.get(etag=True)
    assert changed != etag, 'new value, new etag'
    missing, null_etag = root.child('missing').get(etag=True)
    assert missing is None and isinstance(null_etag, str) and null_etag, f'missing: {null_etag!r}'


@check
def etag_get_if_changed(root):
    root.set('x')
    _, etag = root.get(etag=True)
    changed, value, new_etag = root.get_if_changed(etag)
    assert (changed, value, new_etag) == (False, None, None), 'unchanged answers 304'
    root.set('y')
    changed, value, new_etag = root.get_if_changed(etag)
    assert changed and value == 'y' and new_etag and new_etag != etag, f'got {(changed, value, new_etag)!r}'


@check
def set_if_unchanged_success(root):
    root.set({'count': 1})
    _, etag = root.get(etag=True)
    ok, value, new_etag = root.set_if_unchanged(etag, {'count': 2})
    assert ok, 'matching etag writes'
    assert value == {'count': 2}, f'value {value!r}'
    assert new_etag and new_etag != etag, f'new etag {new_etag!r}'
    assert root.get(etag=True) == ({'count': 2}, new_etag), 'returned etag is the stored one'


@check
def set_if_unchanged_failure(root):
    root.set({'count': 1})
    _, etag = root.get(etag=True)
    root.set({'count': 5})
    ok, value, current_etag = root.set_if_unchanged(etag, {'count': 2})
    assert not ok, 'stale etag does not write'
    assert value == {'count': 5}, f'412 carries the current value, got {value!r}'
    assert current_etag == root.get(etag=True)[1], '412 carries the current etag'
    assert root.get() == {'count': 5}, 'value unchanged'


@check
def set_if_unchanged_invalid_etag(root):
    root.set({'name': 'Edward Cope'})
    ok, value, etag = root.set_if_unchanged('invalid-etag', {'name': 'Jack Horner'})
    assert ok is False and value == {'name': 'Edward Cope'} and isinstance(etag, str), f'{(ok, value, etag)!r}'
    ok, value, new_etag = root.set_if_unchanged(etag, {'name': 'Jack Horner'})
    assert ok is True and value == {'name': 'Jack Horner'} and new_etag != etag
    changed, value, _ = root.get_if_changed('wrong_etag')
    assert changed is True and value == {'name': 'Jack Horner'}


@check
def conditional_write_with_print_silent_still_fails(root):
    # set() sends print=silent; a stale if-match must still answer 412, not a silent 204.
    root.set('current')
    client = root._client  # pylint: disable=protected-access
    try:
        client.request('put', root._add_suffix(), json='other', params='print=silent',  # pylint: disable=protected-access
                       headers={'if-match': 'stale'})
    except exceptions.FailedPreconditionError as error:
        assert error.http_response.status_code == 412 and error.http_response.headers.get('ETag')
    else:
        raise AssertionError('a stale if-match with print=silent was answered as a success')
    assert root.get() == 'current'


@check
def set_if_unchanged_on_missing(root):
    target = root.child('fresh')
    _, etag = target.get(etag=True)
    ok, _, _ = target.set_if_unchanged(etag, 'created')
    assert ok and target.get() == 'created', 'the null etag matches an absent node'
    ok, value, _ = target.set_if_unchanged(etag, 'again')
    assert not ok and value == 'created', 'the null etag no longer matches'


@check
def set_if_unchanged_failure_shape_with_priority(root):
    # The 412 body is what the SDK's transaction() hands to the next attempt instead of a fresh
    # read, so it must have the shape get() gives: no '.priority' / '.value' wrapping.
    root.set({'leaf': {'.value': 1, '.priority': 5}, 'obj': {'n': 1, '.priority': 'p'}})
    ok, value, _ = root.child('leaf').set_if_unchanged('stale', 2)
    assert not ok and value == 1, f'leaf 412 body {value!r}'
    ok, value, _ = root.child('obj').set_if_unchanged('stale', 2)
    assert not ok and value == {'n': 1}, f'object 412 body {value!r}'


@check
def transaction_single(root):
    counter = root.child('counter')
    assert counter.transaction(lambda current: (current or 0) + 1) == 1
    assert counter.transaction(lambda current: (current or 0) + 1) == 2
    assert counter.get() == 2
    result = root.child('obj').transaction(lambda current: {'items': (current or {}).get('items', 0) + 3})
    assert result == {'items': 3} and root.child('obj').get() == {'items': 3}


@check
def transaction_abort_by_exception(root):
    root.set('untouched')

    def refuse(_current):
        raise RuntimeError('no thanks')

    try:
        root.transaction(refuse)
    except RuntimeError:
        pass
    else:
        raise AssertionError('the update function\'s exception propagates')
    assert root.get() == 'untouched'


@check
def transaction_concurrent_counter(root):
    counter = root.child('counter')
    threads, per_thread = 4, 5
    errors, aborted = [], [0]
    lock = threading.Lock()

    def worker():
        for _ in range(per_thread):
            while True:
                try:
                    counter.transaction(lambda current: (current or 0) + 1)
                    break
                except db.TransactionAbortedError:
                    with lock:
                        aborted[0] += 1  # 25 conflicts in a row: retry the whole transaction
                except Exception as error:  # pylint: disable=broad-except
                    errors.append(error)
                    return

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=120)
    assert not errors, f'errors: {errors!r}'
    assert counter.get() == threads * per_thread, f'final count {counter.get()} (aborted retries {aborted[0]})'


# --- queries --------------------------------------------------------------------------------------

DINOSAURS = {
    'bruhathkayosaurus': {'height': 25, 'length': 44},
    'lambeosaurus': {'height': 2.1, 'length': 12.5},
    'linhenykus': {'height': 0.6, 'length': 1},
    'pterodactyl': {'height': 0.6, 'length': 0.8},
    'stegosaurus': {'height': 4, 'length': 9},
    'triceratops': {'height': 3, 'length': 9},
}


@check
def query_order_by_child_range_limit(root):
    root.set(DINOSAURS)
    got = root.order_by_child('height').start_at(3).limit_to_first(2).get()
    assert isinstance(got, collections.OrderedDict), f'type {type(got)}'
    assert list(got.keys()) == ['triceratops', 'stegosaurus'], f'got {list(got.keys())}'
    assert got['triceratops'] == {'height': 3, 'length': 9}


@check
def query_order_by_child_end_at_and_last(root):
    root.set(DINOSAURS)
    got = root.order_by_child('height').end_at(3).get()
    assert list(got.keys()) == ['linhenykus', 'pterodactyl', 'lambeosaurus', 'triceratops'], f'got {list(got)}'
    got = root.order_by_child('length').limit_to_last(2).get()
    assert list(got.keys()) == ['lambeosaurus', 'bruhathkayosaurus'], f'got {list(got)}'


@check
def query_order_by_child_equal_to(root):
    root.set(DINOSAURS)
    got = root.order_by_child('height').equal_to(0.6).get()
    assert list(got.keys()) == ['linhenykus', 'pterodactyl'], f'got {list(got)}'
    nothing = root.order_by_child('height').equal_to(99).get()
    assert nothing in ({}, None), f'no match is empty, got {nothing!r}'


@check
def query_order_by_nested_child(root):
    root.set({
        'a': {'stats': {'score': 5}},
        'b': {'stats': {'score': 1}},
        'c': {'stats': {'score': 3}},
        'd': {'other': 1},
    })
    got = root.order_by_child('stats/score').start_at(2).get()
    assert list(got.keys()) == ['c', 'a'], f'got {list(got)}'


@check
def query_order_by_key(root):
    root.set({'b': 2, 'a': 1, 'd': 4, 'c': 3, '10': 'ten', '9': 'nine'})
    got = root.order_by_key().get()
    # The SDK re-sorts the answer itself and compares keys as plain strings ('10' < '9'), unlike
    # the server's integer-keys-first order; the server's order shows in which keys a limit keeps.
    assert list(got.keys()) == ['10', '9', 'a', 'b', 'c', 'd'], f'got {list(got)}'
    got = root.order_by_key().start_at('b').end_at('c').get()
    assert dict(got) == {'b': 2, 'c': 3}, f'got {got!r}'
    got = root.order_by_key().limit_to_last(2).get()
    assert dict(got) == {'c': 3, 'd': 4}, f'got {got!r}'
    got = root.order_by_key().limit_to_first(2).get()
    assert dict(got) == {'9': 'nine', '10': 'ten'}, f'got {got!r}'


@check
def query_order_by_value(root):
    root.set({'w': 30, 'x': 10, 'y': 'text', 'z': 20, 'v': True})
    got = root.order_by_value().get()
    assert list(got.keys()) == ['v', 'x', 'z', 'w', 'y'], f'got {list(got)}'
    got = root.order_by_value().start_at(15).end_at(30).get()
    assert dict(got) == {'z': 20, 'w': 30}, f'got {got!r}'
    got = root.order_by_value().limit_to_first(2).get()
    assert list(got.keys()) == ['v', 'x'], f'got {list(got)}'
    got = root.order_by_value().equal_to('text').get()
    assert dict(got) == {'y': 'text'}, f'got {got!r}'


@check
def query_string_values_with_plus(root):
    root.set({
        'p1': {'tag': 'a+b'},
        'p2': {'tag': 'a b'},
        'p3': {'tag': 'a+c'},
        'p4': {'tag': 'c++'},
        'p5': {'tag': 'a+b+c'},
    })
    got = root.order_by_child('tag').equal_to('a+b').get()
    assert dict(got) == {'p1': {'tag': 'a+b'}}, f'equal_to("a+b") got {got!r}'
    got = root.order_by_child('tag').start_at('a+b').end_at('a+c').get()
    assert list(got.keys()) == ['p1', 'p5', 'p3'], f'range got {list(got)}'
    got = root.order_by_child('tag').equal_to('a b').get()
    assert dict(got) == {'p2': {'tag': 'a b'}}, f'equal_to("a b") got {got!r}'
    got = root.order_by_child('tag').start_at('c++').get()
    assert list(got.keys()) == ['p4'], f'start_at("c++") got {list(got)}'


@check
def query_on_numeric_keys_returns_all_matches(root):
    root.set({str(n): {'n': n} for n in range(6)})
    got = root.order_by_child('n').start_at(2).limit_to_first(3).get()
    if isinstance(got, list):  # an array-like answer still has to hold exactly the matches
        got = {str(i): v for i, v in enumerate(got) if v is not None}
    assert {k: v['n'] for k, v in got.items()} == {'2': 2, '3': 3, '4': 4}, f'got {got!r}'


@check
def query_limit_zero_and_empty_location(root):
    assert root.order_by_key().limit_to_first(3).get() in ({}, None), 'empty location'
    root.set({'a': 1})
    try:
        got = root.order_by_key().limit_to_first(0).get()
    except exceptions.InvalidArgumentError as error:
        assert 'limitToFirst' in str(error), f'error {error}'  # Canopy refuses a zero limit
    else:
        assert got in ({}, None), f'limit 0 got {got!r}'


@check
def query_unknown_child_index_still_answers(root):
    # Firebase answers 400 "Index not defined" without a .indexOn rule; the emulator and Canopy
    # (before rules) evaluate the query anyway. Either way the SDK must not hang or mis-parse.
    root.set({'a': {'h': 2}, 'b': {'h': 1}})
    try:
        got = root.order_by_child('h').get()
    except exceptions.InvalidArgumentError as error:
        assert 'Index not defined' in str(error), f'error {error}'
    else:
        assert list(got.keys()) == ['b', 'a'], f'got {list(got)}'


# --- priorities and server values -----------------------------------------------------------------


@check
def priorities(root):
    root.set({
        'c': {'.value': 'third', '.priority': 30},
        'a': {'.value': 'first', '.priority': 10},
        'b': {'.value': 'second', '.priority': 20},
        'd': {'name': 'object', '.priority': 'str'},
    })
    assert root.child('a').get() == 'first', 'a plain get hides the priority'
    assert root.child('d').get() == {'name': 'object'}, 'objects drop .priority on plain get'
    # firebase-admin has no public order_by_priority(); build the Query it would use.
    query = db.Query(order_by='$priority', client=root._client, pathurl=root._add_suffix())  # pylint: disable=protected-access
    got = query.limit_to_first(2).get()
    assert set(got.keys()) == {'a', 'b'}, f'$priority limit_to_first(2) got {got!r}'
    got = db.Query(order_by='$priority', client=root._client, pathurl=root._add_suffix()).start_at(15).end_at(30).get()  # pylint: disable=protected-access
    assert set(got.keys()) == {'b', 'c'}, f'$priority range got {got!r}'


@check
def server_value_timestamp(root):
    before = time.time() * 1000
    root.set({'at': {'.sv': 'timestamp'}, 'nested': {'also': {'.sv': 'timestamp'}}})
    after = time.time() * 1000
    got = root.get()
    at = got['at']
    assert isinstance(at, (int, float)) and not isinstance(at, bool), f'timestamp {at!r}'
    assert before - 5000 <= at <= after + 5000, f'timestamp {at} not near now ({before}..{after})'
    assert got['nested']['also'] == at, 'one write resolves every timestamp to the same instant'
    root.update({'updated': {'.sv': 'timestamp'}})
    assert isinstance(root.child('updated').get(), (int, float)), 'server values work in update too'


@check
def server_value_increment(root):
    root.child('n').set(5)
    root.update({'n': {'.sv': {'increment': 3}}})
    assert root.child('n').get() == 8, f'got {root.child("n").get()!r}'
    root.child('m').set({'.sv': {'increment': 2}})
    assert root.child('m').get() == 2, 'increment of a missing value starts at 0'


@check
def rules_document_round_trip(_root):
    # What firebase-admin's own integration tests do to install .indexOn rules.
    client = db.reference()._client  # pylint: disable=protected-access
    rules = client.body('get', '/.settings/rules.json', params='format=strict')
    assert isinstance(rules, dict) and isinstance(rules.get('rules'), dict), f'rules {rules!r}'
    updated = {'rules': dict(rules['rules'], checks={'dinos': {'.indexOn': ['height', 'length']}})}
    client.request('put', '/.settings/rules.json', json=updated)
    again = client.body('get', '/.settings/rules.json', params='format=strict')
    assert again['rules'].get('checks') == {'dinos': {'.indexOn': ['height', 'length']}}, f'rules {again!r}'
    client.request('put', '/.settings/rules.json', json=rules)


# --- failures -------------------------------------------------------------------------------------


@check
def invalid_keys_are_refused(root):
    for bad in ({'a.b': 1}, {'$x': 1}, {'ok': {'bad#key': 1}}, {'br[acket': 1}, {'sl/ash': 1}):
        try:
            root.set(bad)
        except exceptions.InvalidArgumentError as error:
            assert error.http_response is not None and error.http_response.status_code == 400, 'status 400'
            assert str(error), 'the server explains the error'
        except ValueError:
            pass  # refused by the SDK itself
        else:
            raise AssertionError(f'set({bad!r}) was accepted')
        assert root.get() is None, f'nothing stored after set({bad!r}): {root.get()!r}'
    try:
        root.update({'a': {'b.c': 1}})
    except exceptions.InvalidArgumentError:
        pass
    else:
        raise AssertionError('update with an invalid nested key was accepted')
    assert root.get() is None


@check
def invalid_data_is_refused(root):
    root.set('before')
    attempts = {
        'too deep': lambda: root.child('/'.join(['d'] * 40)).set(1),
        'key over 768 bytes': lambda: root.child('k' * 800).set(1),
        'overlapping update': lambda: root.update({'a': 1, 'a/b': 2}),
        'unknown server value': lambda: root.set({'.sv': 'bogus'}),
    }
    for name, attempt in attempts.items():
        try:
            attempt()
        except exceptions.InvalidArgumentError as error:
            assert error.http_response.status_code == 400, f'{name}: status {error.http_response.status_code}'
        else:
            raise AssertionError(f'{name} was accepted')
    try:
        root.set(float('nan'))  # requests refuses to encode it: never reaches the server
    except (exceptions.FirebaseError, ValueError):
        pass
    else:
        raise AssertionError('NaN was accepted')
    assert root.get() == 'before', f'nothing changed: {root.get()!r}'


@check
def auth_variable_override_param_accepted(root):
    # databaseAuthVariableOverride adds auth_variable_override=JSON to every request. With the
    # default open rules the requests succeed whatever identity they name.
    for name, override in (('compat-override-user', {'uid': 'user1'}), ('compat-override-none', None)):
        app = firebase_admin.initialize_app(
            options={'databaseURL': f'https://{NAMESPACE}.firebaseio.com', 'databaseAuthVariableOverride': override},
            name=name)
        try:
            ref = db.reference(root.path, app)
            assert 'auth_variable_override' in ref._client.params  # pylint: disable=protected-access
            ref.child(name).set('written')
            assert ref.child(name).get() == 'written'
        finally:
            firebase_admin.delete_app(app)


# The rules of firebase-admin's own integration suite (integration/test_db.py, resource
# dinosaurs_index.json), under which its TestAuthVariableOverride tests run.
OVERRIDE_RULES = {
    '_adminsdk': {
        'python': {
            'dinodb': {
                'dinosaurs': {'.indexOn': ['height', 'ratio/length']},
                'scores': {'.indexOn': '.value'},
            },
            'protected': {
                'user1': {'.read': "auth.uid == 'user1'", '.write': "auth.uid == 'user1'"},
                'user2': {'.read': "auth.uid == 'user1'", '.write': "auth.uid == 'user2'"},
            },
            'admin': {'.read': 'false', '.write': 'false'},
            'public': {'.read': 'true'},
        }
    }
}


def with_override_rules(body):
    """Installs OVERRIDE_RULES as the suite's update_rules fixture does (GET with format=strict,
    replace 'rules', PUT), runs body with apps overriding auth as user1 and as None, and puts the
    previous rules back."""
    client = db.reference('', APP)._client  # pylint: disable=protected-access
    previous = client.body('get', '/.settings/rules.json', params='format=strict')
    rules = dict(previous)
    rules['rules'] = OVERRIDE_RULES
    client.request('put', '/.settings/rules.json', json=rules)
    url = f'https://{NAMESPACE}.firebaseio.com'
    user1 = firebase_admin.initialize_app(
        options={'databaseURL': url, 'databaseAuthVariableOverride': {'uid': 'user1'}}, name='override-user1')
    nobody = firebase_admin.initialize_app(
        options={'databaseURL': url, 'databaseAuthVariableOverride': None}, name='override-none')
    try:
        body(user1, nobody)
    finally:
        firebase_admin.delete_app(user1)
        firebase_admin.delete_app(nobody)
        client.request('put', '/.settings/rules.json', json=previous)


def init_ref(path):
    admin_ref = db.reference(path, APP)
    admin_ref.set('test')
    assert admin_ref.get() == 'test'


def expect_permission_denied(attempt):
    try:
        attempt()
    except exceptions.UnauthenticatedError as error:
        assert str(error) == 'Permission denied', f'message {error}'
    else:
        raise AssertionError('allowed')


@check
def auth_variable_override_rules_enforced(_root):
    # firebase-admin's TestAuthVariableOverride: test_no_access, test_read, test_read_write,
    # test_query and test_none_auth_override, in that order.
    def body(user1, nobody):
        init_ref('_adminsdk/python/admin')
        user_ref = db.reference('_adminsdk/python/admin', user1)
        expect_permission_denied(user_ref.get)
        expect_permission_denied(lambda: user_ref.set('test2'))

        init_ref('_adminsdk/python/protected/user2')
        user_ref = db.reference('_adminsdk/python/protected/user2', user1)
        assert user_ref.get() == 'test'
        expect_permission_denied(lambda: user_ref.set('test2'))

        init_ref('_adminsdk/python/protected/user1')
        user_ref = db.reference('_adminsdk/python/protected/user1', user1)
        assert user_ref.get() == 'test'
        user_ref.set('test2')
        assert user_ref.get() == 'test2'

        user_ref = db.reference('_adminsdk/python/protected', user1)
        expect_permission_denied(lambda: user_ref.order_by_key().limit_to_first(2).get())

        init_ref('_adminsdk/python/public')
        assert db.reference('_adminsdk/python/public', nobody).get() == 'test'
        ref = db.reference('_adminsdk/python', nobody)
        expect_permission_denied(lambda: ref.child('protected/user1').get())
        expect_permission_denied(lambda: ref.child('protected/user2').get())
        expect_permission_denied(lambda: ref.child('admin').get())

    with_override_rules(body)


@check
def invalid_path_refused_by_sdk(_root):
    try:
        db.reference('/bad.path')
    except ValueError:
        pass
    else:
        raise AssertionError('the SDK accepted a path with "."')


@check
def query_without_order_by_is_rejected(root):
    # The SDK always sends orderBy with its queries; the server must refuse range parameters
    # without one, as Firebase does, and the SDK must surface that as an error.
    client = root._client  # pylint: disable=protected-access
    try:
        client.body('get', root._add_suffix(), params='limitToFirst=1')  # pylint: disable=protected-access
    except exceptions.InvalidArgumentError as error:
        assert 'orderBy' in str(error), f'message {error}'
    else:
        raise AssertionError('limitToFirst without orderBy was accepted')


# --- listen (SSE) ---------------------------------------------------------------------------------


class Recorder:
    def __init__(self):
        self.events = []
        self.condition = threading.Condition()

    def __call__(self, event):
        with self.condition:
            self.events.append((event.event_type, event.path, event.data))
            self.condition.notify_all()

    def wait_for(self, count, timeout=10):
        deadline = time.time() + timeout
        with self.condition:
            while len(self.events) < count:
                remaining = deadline - time.time()
                if remaining <= 0:
                    raise AssertionError(f'waited for {count} events, have {self.events!r}')
                self.condition.wait(remaining)
            return list(self.events)


# ListenerRegistration.close() returns once its reader thread gets the next bytes of the stream: at
# the latest the server's next keep-alive (--sse-keepalive-interval: run.sh's servers send one a
# second; the README's server, with the default, every 30 s, which COMPAT_CLOSE_SECONDS allows for).
CLOSE_SECONDS = float(os.environ.get('COMPAT_CLOSE_SECONDS', '5'))


def close_promptly(*registrations):
    slow = []
    for registration in registrations:  # every one, so that no reader thread outlives its check
        started = time.time()
        registration.close()
        elapsed = time.time() - started
        if elapsed >= CLOSE_SECONDS:
            slow.append(f'{elapsed:.1f}s')
    assert not slow, f'close() took {", ".join(slow)} (more than {CLOSE_SECONDS:g}s)'


@check
def listen_events(root):
    root.set({'a': 1, 'b': {'c': 2}})
    recorder = Recorder()
    registration = root.listen(recorder)
    try:
        events = recorder.wait_for(1)
        assert events[0] == ('put', '/', {'a': 1, 'b': {'c': 2}}), f'first event {events[0]!r}'
        root.child('b/c').set(3)
        events = recorder.wait_for(2)
        assert events[1] == ('put', '/b/c', 3), f'set event {events[1]!r}'
        root.update({'a': 10, 'd/e': 'x'})
        events = recorder.wait_for(3)
        kind, path, data = events[2]
        assert kind == 'patch' and path == '/' and data == {'a': 10, 'd/e': 'x'}, f'update event {events[2]!r}'
        root.child('a').delete()
        events = recorder.wait_for(4)
        assert events[3] == ('put', '/a', None), f'delete event {events[3]!r}'
        root.set('replaced')
        events = recorder.wait_for(5)
        assert events[4] == ('put', '/', 'replaced'), f'replace event {events[4]!r}'
    finally:
        close_promptly(registration)


@check
def listen_empty_location_and_outside_writes(root):
    target = root.child('watched')
    recorder = Recorder()
    registration = target.listen(recorder)
    try:
        events = recorder.wait_for(1)
        assert events[0] == ('put', '/', None), f'first event {events[0]!r}'
        root.child('sibling').set('ignored')
        root.set({'watched': {'x': 1}})  # a write above the location
        events = recorder.wait_for(2)
        assert events[1][0] == 'put' and events[1][2] in ({'x': 1},), f'ancestor write event {events[1]!r}'
        time.sleep(1.5)  # a keep-alive passes without reaching the callback
        assert len(recorder.events) == 2, f'unexpected events {recorder.events!r}'
    finally:
        close_promptly(registration)


@check
def listen_sees_rapid_writes_in_order(root):
    recorder = Recorder()
    registration = root.listen(recorder)
    try:
        recorder.wait_for(1)
        for n in range(30):
            root.child('n').set(n)
        events = recorder.wait_for(31)
        values = [data for (_kind, path, data) in events[1:] if path == '/n']
        assert values == list(range(30)), f'values {values!r}'
    finally:
        close_promptly(registration)


@check
def listen_two_listeners(root):
    first, second = Recorder(), Recorder()
    one = root.child('x').listen(first)
    two = root.listen(second)
    try:
        first.wait_for(1)
        second.wait_for(1)
        root.child('x').set('both')
        assert first.wait_for(2)[1] == ('put', '/', 'both'), f'{first.events!r}'
        assert second.wait_for(2)[1] == ('put', '/x', 'both'), f'{second.events!r}'
    finally:
        close_promptly(one, two)


def quiet_listener_close(args):
    # ListenerRegistration.close() closes the response under the reader thread; urllib3 then
    # raises AttributeError in that thread (an SDK race, harmless: the thread ends and join()
    # returns). Keep it out of the log; anything else is reported as usual.
    if args.exc_type is AttributeError and args.thread is not None and '_start_listen' in args.thread.name:
        return
    threading.__excepthook__(args)


def main():
    threading.excepthook = quiet_listener_close
    selected = set(sys.argv[1:])
    run_checks(selected)
    firebase_admin.delete_app(APP)
    print(f"firebase-admin compat: {RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS['failed'] else 0


if __name__ == '__main__':
    sys.exit(main())
