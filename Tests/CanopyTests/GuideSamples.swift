// swift-format-ignore-file
import Canopy
import Foundation

// Samples 1 to 8 of the offline guide ("Offline capabilities on Apple platforms", Firebase, code
// samples Apache-2.0), unchanged: each must compile against `import Canopy`. `GuideSampleTests`
// runs them against a real server.

func sample1Persistence() {
    Database.database().isPersistenceEnabled = true
}

func sample2KeepSynced() {
    let scoresRef = Database.database().reference(withPath: "scores")
    scoresRef.keepSynced(true)
    scoresRef.keepSynced(false)
}

func sample3OfflineQueries() {
    let scoresRef = Database.database().reference(withPath: "scores")
    scoresRef.queryOrderedByValue().queryLimited(toLast: 4).observe(.childAdded) { snapshot in
      print("The \(snapshot.key) dinosaur's score is \(snapshot.value ?? "null")")
    }
    scoresRef.queryOrderedByValue().queryLimited(toLast: 2).observe(.childAdded) { snapshot in
      print("The \(snapshot.key) dinosaur's score is \(snapshot.value ?? "null")")
    }
}

func sample4OnDisconnect() {
    let presenceRef = Database.database().reference(withPath: "disconnectmessage");
    // Write a string when this client loses connection
    presenceRef.onDisconnectSetValue("I disconnected!")
    presenceRef.onDisconnectRemoveValue { error, reference in
      if let error = error {
        print("Could not establish onDisconnect event: \(error)")
      }
    }
    presenceRef.onDisconnectSetValue("I disconnected")
    // some time later when we change our minds
    presenceRef.cancelDisconnectOperations()
}

func sample5ConnectionState() {
    let connectedRef = Database.database().reference(withPath: ".info/connected")
    connectedRef.observe(.value, with: { snapshot in
      if snapshot.value as? Bool ?? false {
        print("Connected")
      } else {
        print("Not connected")
      }
    })
}

func sample6ServerTimestamp() {
    let userLastOnlineRef = Database.database().reference(withPath: "users/morgan/lastOnline")
    userLastOnlineRef.onDisconnectSetValue(ServerValue.timestamp())
}

func sample7ClockSkew() {
    let offsetRef = Database.database().reference(withPath: ".info/serverTimeOffset")
    offsetRef.observe(.value, with: { snapshot in
      if let offset = snapshot.value as? TimeInterval {
        print("Estimated server time in milliseconds: \(Date().timeIntervalSince1970 * 1000 + offset)")
      }
    })
}

func sample8Presence() {
    // since I can connect from multiple devices, we store each connection instance separately
    // any time that connectionsRef's value is null (i.e. has no children) I am offline
    let myConnectionsRef = Database.database().reference(withPath: "users/morgan/connections")

    // stores the timestamp of my last disconnect (the last time I was seen online)
    let lastOnlineRef = Database.database().reference(withPath: "users/morgan/lastOnline")

    let connectedRef = Database.database().reference(withPath: ".info/connected")

    connectedRef.observe(.value, with: { snapshot in
      // only handle connection established (or I've reconnected after a loss of connection)
      guard let connected = snapshot.value as? Bool, connected else { return }

      // add this device to my connections list
      let con = myConnectionsRef.childByAutoId()

      // when this device disconnects, remove it.
      con.onDisconnectRemoveValue()

      // The onDisconnect() call is before the call to set() itself. This is to avoid a race condition
      // where you set the user's presence to true and the client disconnects before the
      // onDisconnect() operation takes effect, leaving a ghost user.

      // this value could contain info about the device or a timestamp instead of just true
      con.setValue(true)

      // when I disconnect, update the last time I was seen online
      lastOnlineRef.onDisconnectSetValue(ServerValue.timestamp())
    })
}
