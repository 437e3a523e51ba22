// Issue 13, finding 9: encoding a managed object graph with a cycle must not recurse until
// the stack overflows. Objects are identified by (table, key), not by instance (a managed
// link reads as a new instance each time); an object met again on the path from the root
// is written as its primary key (null when its type has none). docs/json.md ("Cycles").

import XCTest
@testable import Strata

/// A linked type without a primary key.
final class Loop: Object {
    @Persisted var label: String = ""
    @Persisted var next: Loop?
}

final class ReliabilityCycleTests: RealmTestCase {
    private func text(_ json: JSONValue) throws -> String { String(decoding: try json.data(), as: UTF8.self) }

    func testManagedToOneCycleEncodesTheRevisitAsItsPrimaryKey() throws {
        let realm = try openRealm(types: [Node.self, Loop.self])
        try realm.write {
            let a = Node(), b = Node()
            a.name = "a"
            b.name = "b"
            a.next = b
            b.next = a
            try realm.add(a)
        }
        let a = try XCTUnwrap(realm.object(ofType: Node.self, forPrimaryKey: "a"))
        let coder = RealmCoder(realm: realm)
        XCTAssertEqual(try text(coder.encodeValue(a)),
                       #"{"children":[],"name":"a","next":{"children":[],"name":"b","next":"a"}}"#)
        // Diamonds are not cycles: an object reached twice on different paths is written whole.
        try realm.write {
            let b = try XCTUnwrap(realm.object(ofType: Node.self, forPrimaryKey: "b"))
            b.next = nil
            a.children.append(b)
        }
        XCTAssertEqual(try text(coder.encodeValue(a)),
                       #"{"children":[{"children":[],"name":"b","next":null}],"name":"a","next":{"children":[],"name":"b","next":null}}"#)
    }

    func testManagedListCyclesAndSelfLinksStop() throws {
        let realm = try openRealm(types: [Node.self, Loop.self])
        try realm.write {
            let a = Node()
            a.name = "a"
            try realm.add(a)
            a.next = a
            a.children.append(a)
            a.children.append(a)
        }
        let a = try XCTUnwrap(realm.object(ofType: Node.self, forPrimaryKey: "a"))
        XCTAssertEqual(try text(RealmCoder(realm: realm).encodeValue(a)), #"{"children":["a","a"],"name":"a","next":"a"}"#)
        // The Realm+JSON front end and unmanaged copies share the engine.
        XCTAssertEqual(a.jsonDictionary()["next"] as? String, "a")
        let copy = a.deepCopy()
        XCTAssertEqual(try text(RealmCoder(realm: realm).encodeValue(copy)), #"{"children":["a","a"],"name":"a","next":"a"}"#)
    }

    func testCycleWithoutPrimaryKeyEndsInNull() throws {
        let realm = try openRealm(types: [Node.self, Loop.self])
        try realm.write {
            let x = Loop(), y = Loop()
            x.label = "x"
            y.label = "y"
            x.next = y
            y.next = x
            try realm.add(x)
        }
        let x = try XCTUnwrap(realm.objects(Loop.self).filter(#Predicate { $0.label == "x" }).first)
        XCTAssertEqual(try text(RealmCoder(realm: realm).encodeValue(x)), #"{"label":"x","next":{"label":"y","next":null}}"#)
    }
}
