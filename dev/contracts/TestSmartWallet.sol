// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.37;

/// A minimal ERC-1271 smart wallet for tests: a signature is valid when its
/// owner EOA signed the digest. Lets tests pay from a contract account with
/// the `bytes signature` form of transferWithAuthorization.
contract TestSmartWallet {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 digest, bytes memory signature) external view returns (bytes4) {
        if (signature.length != 65) return 0xffffffff;
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        return ecrecover(digest, v, r, s) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}
