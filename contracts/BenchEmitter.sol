// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title BenchEmitter
/// @notice Benchmark and test fixture only (never deployed by evm/deploy.ts). It emits events with
///         exactly the signatures of TaskEscrow's, many per transaction, so bench/indexer.ts can fill
///         a chain with tens of thousands of decodable escrow-source events in a few blocks.
contract BenchEmitter {
    event TaskFunded(bytes32 indexed taskId, address indexed poster, uint256 amount, uint256 total);
    event TaskReleased(bytes32 indexed taskId, address indexed worker, uint256 amount);
    event TaskRefunded(bytes32 indexed taskId, address indexed poster, uint256 amount);

    /// @notice Emits `count` events cycling Funded, Released, Refunded; task ids start at `firstId`.
    function emitMany(uint256 firstId, uint256 count) external {
        for (uint256 i = 0; i < count; i++) {
            uint256 id = firstId + i;
            uint256 k = id % 3;
            if (k == 0) emit TaskFunded(bytes32(id), msg.sender, id, id);
            else if (k == 1) emit TaskReleased(bytes32(id), msg.sender, id);
            else emit TaskRefunded(bytes32(id), msg.sender, id);
        }
    }
}
